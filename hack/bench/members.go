package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e"
	"github.com/fedop-io/fedop/member"
)

// Item 5: the time from a manager's start to every member connected and
// synced, with 10 and with 50 apiserver-only members.

const (
	// membersNamespace holds item 5's registration Secrets on the host:
	// not the main manager's fedop-system, so that no manager but item 5's
	// connects to these members.
	membersNamespace = "fedop-bench-members"
	// connectPoll is how often the metrics of a starting manager are read:
	// the resolution of the connection times.
	connectPoll = 50 * time.Millisecond
	// connectTimeout bounds one manager's start to every member connected:
	// a member that does not sync is retried after SyncTimeout (30s).
	connectTimeout = 2 * time.Minute
	// startParallel is how many apiservers start at once: each takes most
	// of a core for about a second.
	startParallel = 3
	// targetConnect is the target for the largest size.
	targetConnect     = 15 * time.Second
	targetConnectSize = 50
)

// managerRun is one fedop-manager process started by the benchmark for
// items 5 and 6, watching the registration Secrets of its own namespace.
type managerRun struct {
	proc       *proc
	metricsURL string
	// pprofURL is empty when the binary serves no profiles.
	pprofURL string
	// started is just before the process was started.
	started time.Time
}

// startManager starts fedop-manager with the Secrets of namespace ns as
// its members, on the lab's host, with the defaults of everything else
// (as bench.sh runs the main manager) and without a health probe
// endpoint, which nothing reads. Its log is appended to the lab
// directory's manager-<ns>.log.
func (b *bench) startManager(ns, what string) (*managerRun, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	m := &managerRun{metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
	args := []string{b.managerBin,
		"--member-namespace", ns,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--metrics-secure=false",
		"--health-probe-bind-address", "0",
		"--leader-elect=false",
	}
	if b.managerPprof {
		pport, err := freePort()
		if err != nil {
			return nil, err
		}
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pport))
		m.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pport)
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") {
			env = append(env, e)
		}
	}
	env = append(env, "KUBECONFIG="+filepath.Join(b.labDir, "host.kubeconfig"))
	logPath := filepath.Join(b.labDir, "manager-"+ns+".log")
	if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		// The header only helps a reader of the log; the run does not need it.
		_, _ = fmt.Fprintf(f, "=== %s: %s\n", time.Now().Format(time.RFC3339), what)
		_ = f.Close()
	}
	m.started = time.Now()
	if m.proc, err = startProc("fedop-manager", logPath, env, args...); err != nil {
		return nil, err
	}
	return m, nil
}

// stop ends the manager as Kubernetes would: SIGTERM, SIGKILL after 30s.
func (m *managerRun) stop() { m.proc.stop(30 * time.Second) }

// servesPprof reports whether the fedop-manager binary has the
// --pprof-bind-address flag.
func servesPprof(bin string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return strings.Contains(string(out), "-pprof-bind-address")
}

// connectRun is one manager start with members registered.
type connectRun struct {
	members int
	// up is when the metrics endpoint first answered; connected holds,
	// for each member, when the manager's fedop_member_connected gauge was
	// first seen at 1; all is when every member was. Each is counted from
	// just before the process was started, and read on receipt of a scrape
	// taken every connectPoll: too late by up to connectPoll plus a scrape.
	up        time.Duration
	connected []time.Duration
	all       time.Duration
	scrapes   int
	// rss is the manager's steady RSS once every member was connected;
	// heapLive and goroutines are from its metrics then.
	rss, heapLive, goroutines float64
	// idle is item 8's window with the manager idle after that, if
	// measured.
	idle *idleRun
}

// percentileOf returns the time by which share (0-1] of the members were
// connected.
func (c connectRun) percentileOf(share float64) time.Duration {
	return e2e.Percentile(c.connected, share*100)
}

// waitConnected polls m's metrics every connectPoll until every member in
// names is connected, m exits, or connectTimeout passes.
func waitConnected(ctx context.Context, m *managerRun, names []string) (connectRun, error) {
	// A client of its own with a short timeout: a scrape that hangs must
	// not hide the next one.
	c := &http.Client{Timeout: 2 * time.Second}
	defer c.CloseIdleConnections()
	run := connectRun{members: len(names)}
	seen := map[string]time.Duration{}
	err := wait.PollUntilContextTimeout(ctx, connectPoll, connectTimeout, true, func(ctx context.Context) (bool, error) {
		if m.proc.exited() {
			return false, fmt.Errorf("fedop-manager exited: %v\n%s", m.proc.err, m.proc.logTail(15))
		}
		s, err := scrapeWith(ctx, c, m.metricsURL)
		if err != nil {
			return false, nil
		}
		at := s.at.Sub(m.started)
		run.scrapes++
		if run.up == 0 {
			run.up = at
		}
		for _, name := range names {
			if _, ok := seen[name]; ok {
				continue
			}
			if s.connected(name) {
				seen[name] = at
			}
		}
		return len(seen) == len(names), nil
	})
	if err != nil {
		if m.proc.exited() {
			return run, err
		}
		return run, fmt.Errorf("waiting for %d members to connect (%d did, metrics up: %t): %w\n%s",
			len(names), len(seen), run.up > 0, err, m.proc.logTail(15))
	}
	run.connected = slices.Sorted(maps.Values(seen))
	run.all = run.connected[len(run.connected)-1]
	return run, nil
}

// registerMembers creates (or updates) the registration Secret of each
// member in namespace ns of the host, created if need be: labelled,
// kubeconfig in data key kubeconfig, as hack/register-member.sh writes
// them.
func (b *bench) registerMembers(ctx context.Context, ns string, kubeconfigs map[string][]byte) error {
	if err := b.ensureHostNamespace(ctx, ns); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(kubeconfigs)) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{member.LabelMemberCluster: "true"}},
			Data:       map[string][]byte{member.KubeconfigKey: kubeconfigs[name]},
		}
		err := b.host.Create(ctx, s)
		if apierrors.IsAlreadyExists(err) {
			err = b.host.Update(ctx, s)
		}
		if err != nil {
			return fmt.Errorf("registering member %s in %s: %w", name, ns, err)
		}
	}
	return nil
}

// labKubeconfigs returns the kubeconfigs hack/lab.sh registered for the
// lab's members names in the main manager's namespace.
func (b *bench) labKubeconfigs(ctx context.Context, names []string) (map[string][]byte, error) {
	kcs := map[string][]byte{}
	for _, name := range names {
		var s corev1.Secret
		if err := b.host.Get(ctx, client.ObjectKey{Namespace: member.DefaultNamespace, Name: name}, &s); err != nil {
			return nil, fmt.Errorf("the lab's registration of %s: %w", name, err)
		}
		kcs[name] = s.Data[member.KubeconfigKey]
	}
	return kcs, nil
}

// ensureHostNamespace creates namespace ns on the host unless it exists.
func (b *bench) ensureHostNamespace(ctx context.Context, ns string) error {
	err := b.host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on the host: %w", ns, err)
	}
	return nil
}

// deleteHostNamespace deletes namespace ns on the host, without waiting:
// its Secrets are the benchmark's only objects there.
func (b *bench) deleteHostNamespace(ctx context.Context, ns string) {
	err := b.host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsNotFound(err) {
		b.logf("Deleting namespace %s on the host: %v", ns, err)
	}
}

// ensureFleet starts the apiserver-only members' etcd, once.
func (b *bench) ensureFleet(ctx context.Context) error {
	if b.fleet != nil {
		return nil
	}
	f, err := newFleet(ctx, b.labDir, b.binDir, b.logf)
	if err != nil {
		return err
	}
	b.fleet = f
	b.cleanup(func() {
		b.logf("Stopping the apiserver-only members and their etcd")
		f.close()
	})
	return nil
}

// membersPhase runs item 5: for each size, rounds manager starts with that
// many apiserver-only members registered, from the smallest size up (the
// apiservers and Secrets of a size are kept for the next).
func (b *bench) membersPhase(ctx context.Context) error {
	if err := b.ensureFleet(ctx); err != nil {
		return err
	}
	defer b.deleteHostNamespace(context.Background(), membersNamespace)
	res := &b.res.members
	for i, n := range b.memberSizes {
		if err := b.fleet.grow(ctx, n, startParallel); err != nil {
			if !errors.Is(err, errNoMemory) {
				return err
			}
			// Better a size not measured than a machine out of memory.
			for _, n := range b.memberSizes[i:] {
				b.logf("Item 5 with %d members not measured: %v", n, err)
				res.skipped = append(res.skipped, skippedSize{n, err.Error()})
			}
			break
		}
		if err := b.registerMembers(ctx, membersNamespace, b.fleet.kubeconfigs(n)); err != nil {
			return err
		}
		for r := 1; r <= b.memberRounds; r++ {
			run, err := b.connectRound(ctx, b.fleet.members[:n], fmt.Sprintf("item 5, %d members, round %d", n, r))
			if err != nil {
				return fmt.Errorf("%d members, round %d: %w", n, r, err)
			}
			b.logf("%d members, round %d: metrics up after %s, first member connected after %s, half after %s, all after %s (%d scrapes); RSS %s, %0.f goroutines",
				n, r, ms(run.up), ms(run.connected[0]), ms(run.percentileOf(0.5)), ms(run.all), run.scrapes, mib(run.rss), run.goroutines)
			if i := run.idle; i != nil {
				b.logf("%d members, round %d, idle %s: manager CPU %.3f s/s; per member GET %s %.2f/s (%.2f to %.2f), other requests %.2f/s; "+
					"the manager's own probe count %.2f/s",
					n, r, ms(i.window), i.cpu, probePath, median(i.probes), slices.Min(i.probes), slices.Max(i.probes), median(i.others), i.managerProbes)
			}
			res.runs = append(res.runs, run)
		}
	}
	if len(b.fleet.members) == 0 {
		return nil
	}
	// What the members cost, with no manager connected: their memory now,
	// after fedop's caches watched them, and their CPU while idle; for
	// item 8, the requests they serve by themselves meanwhile.
	var before []scrape
	if b.items[8] {
		var err error
		if before, err = scrapeFleet(ctx, b.fleet.members); err != nil {
			return err
		}
	}
	st, err := b.fleet.stats(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	res.fleet = st
	if b.items[8] {
		after, err := scrapeFleet(ctx, b.fleet.members)
		if err != nil {
			return err
		}
		res.baseline = idleRun{members: len(b.fleet.members)}
		res.baseline.probes, res.baseline.others = requestRates(before, after)
		b.logf("Apiserver-only members with no manager connected: per member GET %s %.2f/s, other requests %.2f/s",
			probePath, median(res.baseline.probes), median(res.baseline.others))
	}
	b.logf("Apiserver-only members: %d, RSS each median %s (min %s, max %s), etcd %s; start median %s and %.2f CPU s each; idle %.2f cores in all",
		st.members, mib(st.rssMedian), mib(st.rssMin), mib(st.rssMax), mib(st.etcdRSS), ms(st.startup), st.startCPU, st.idleCores)

	// A missed target gets a CPU profile of one more start, when the
	// manager serves profiles.
	largest := b.memberSizes[len(b.memberSizes)-1]
	if all := res.connectAll(largest); largest == len(b.fleet.members) && len(all) > 0 && largest >= targetConnectSize && median(all) > targetConnect {
		if !b.managerPprof {
			res.profileNote = "fedop-manager serves no pprof endpoint (no --pprof-bind-address flag), so no profile was taken."
		} else if p, err := b.profileConnect(ctx, largest); err != nil {
			res.profileNote = fmt.Sprintf("taking a profile failed: %v", err)
		} else {
			res.profile = &p
		}
	}
	return nil
}

// connectRound starts a manager with members registered, measures the
// time to all of them connected and its memory then, for item 8 watches it
// idle, and stops it.
func (b *bench) connectRound(ctx context.Context, members []*apiMember, what string) (connectRun, error) {
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.name)
	}
	m, err := b.startManager(membersNamespace, what)
	if err != nil {
		return connectRun{}, err
	}
	defer m.stop()
	run, err := waitConnected(ctx, m, names)
	if err != nil {
		return run, err
	}
	if run.rss, err = steadyRSS(ctx, m.proc.pid()); err != nil {
		return run, err
	}
	s, err := scrapeMetrics(ctx, m.metricsURL)
	if err != nil {
		return run, err
	}
	run.heapLive, _ = s.sum("go_gc_heap_live_bytes", nil)
	run.goroutines, _ = s.sum("go_goroutines", nil)
	if b.items[8] {
		idle, err := b.measureIdle(ctx, m, members)
		if err != nil {
			return run, fmt.Errorf("item 8, watching the manager idle: %w", err)
		}
		run.idle = &idle
	}
	return run, nil
}

// profileConnect starts one more manager with n members and takes a CPU
// profile of its first 15 seconds.
func (b *bench) profileConnect(ctx context.Context, n int) (profile, error) {
	m, err := b.startManager(membersNamespace, fmt.Sprintf("item 5, %d members, profiled", n))
	if err != nil {
		return profile{}, err
	}
	defer m.stop()
	c := &http.Client{Timeout: time.Second}
	if err := waitReady(ctx, m.proc, "/debug/pprof/", 30*time.Second, httpOK(c, m.pprofURL+"/")); err != nil {
		return profile{}, err
	}
	return fetchProfile(ctx, m.pprofURL, "profile", "seconds=15", b.labDir, "cpu-members.pb.gz", "",
		fmt.Sprintf("CPU, the first 15 s of a manager connecting to %d members", n))
}

// membersResult is item 5's outcome.
type membersResult struct {
	runs  []connectRun
	fleet fleetStats
	// skipped says which sizes were not measured, and why.
	skipped     []skippedSize
	profile     *profile
	profileNote string
	// baseline is item 8's requests of the members with no manager
	// connected (no CPU).
	baseline idleRun
}

// skippedSize is a size of item 5 that was not measured.
type skippedSize struct {
	members int
	reason  string
}

// connectAll returns the time to all members connected of every round
// with n members.
func (r *membersResult) connectAll(n int) []time.Duration {
	return collect(r.runs, func(run connectRun) (time.Duration, bool) { return run.all, run.members == n })
}

// rssWith returns the median RSS of the rounds with n members.
func (r *membersResult) rssWith(n int) float64 {
	return median(collect(r.runs, func(run connectRun) (float64, bool) { return run.rss, run.members == n }))
}

// stopMainManager ends the manager hack/bench.sh started (items 1 to 4),
// so that it and the managers of items 5 and 6 never reconcile the same
// FederationClusters: every manager reconciles every FederationCluster on
// the host. An exited manager is an error: items 1 to 4 needed it.
func (b *bench) stopMainManager(ctx context.Context) error {
	if b.managerPID == 0 {
		return nil
	}
	if !managerAlive(b.managerPID) {
		return fmt.Errorf("the main fedop-manager (pid %d) exited before items 5 and 6", b.managerPID)
	}
	if err := syscall.Kill(b.managerPID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping the main fedop-manager: %w", err)
	}
	gone := func(context.Context) (bool, error) { return !managerAlive(b.managerPID), nil }
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, gone); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = syscall.Kill(b.managerPID, syscall.SIGKILL)
		if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, gone); err != nil {
			return err
		}
	}
	b.logf("Stopped the main fedop-manager (pid %d)", b.managerPID)
	return nil
}

// clearWorkloads deletes the FederationClusters of items 1 to 4 and their
// pods and Services, once no manager runs: the managers of items 5 and 6
// would otherwise reconcile them (and cache their 10,000 pods). Their
// finalizers are dropped: the manager that would honour them is stopped,
// and the benchmark deletes what they guard itself, at once (grace period
// 0: nothing runs in kwok's pods).
func (b *bench) clearWorkloads(ctx context.Context) error {
	var list v1alpha1.FederationClusterList
	if err := b.host.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		fc := &list.Items[i]
		if err := dropFinalizers(ctx, b.host, fc); err != nil {
			return err
		}
		if err := b.host.Delete(ctx, fc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting FederationCluster %s: %w", fc.Name, err)
		}
	}
	start := time.Now()
	// One DeleteCollection per FederationCluster and member, all at once:
	// kube-apiserver deletes a collection's objects one by one, so 10,000
	// pods in one request take minutes, and in parallel requests a
	// fraction of that. A last one per member takes whatever is left
	// (pods of FederationClusters already gone).
	deletePods := func(cs kubernetes.Interface, selector string) error {
		return cs.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: selector})
	}
	var g errgroup.Group
	for _, name := range b.options.members {
		for i := range list.Items {
			sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: list.Items[i].Name}).String()
			g.Go(func() error {
				if err := deletePods(b.members[name], sel); err != nil {
					return fmt.Errorf("deleting the pods of %s in %s: %w", list.Items[i].Name, name, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	selector := v1alpha1.ManagedBySelector().String()
	for _, name := range b.options.members {
		cs := b.members[name]
		if err := deletePods(cs, selector); err != nil {
			return fmt.Errorf("deleting fedop's pods in %s: %w", name, err)
		}
		svcs, err := cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		for _, s := range svcs.Items {
			if err := cs.CoreV1().Services(namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	if len(list.Items) > 0 {
		b.logf("Deleted %d FederationClusters of items 1 to 4 and their pods in %s", len(list.Items), ms(time.Since(start)))
	}
	return nil
}
