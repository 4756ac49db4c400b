package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e"
)

// Item 6: a dead member. A manager has ten members: the lab's two full
// clusters, where pods are scheduled and become Ready, and apiserver-only
// members. A FederationCluster on the two full clusters is upgraded over
// and over while one apiserver-only member, which holds the pods of
// another FederationCluster, is SIGSTOPped: its sockets stay open and
// nothing answers, the worst way for a member to die (a refused
// connection fails fast; this hangs until a timeout).

const (
	// deadNamespace holds item 6's registration Secrets on the host.
	deadNamespace = "fedop-bench-dead"
	// samplePoll is how often the manager's metrics are read during the
	// dead period, to see when it marks the member disconnected;
	// goroutineEvery how often a goroutine sample is kept.
	samplePoll     = time.Second
	goroutineEvery = 10 * time.Second
	// goroutineTolerance is the most the median goroutine count of the
	// last quarter of the dead period may exceed the first quarter's for
	// the count to be flat. A leak of one goroutine per failed probe (every
	// 10 s) adds 60 in 10 minutes; a reconcile or a watch in flight at a
	// sample adds a few.
	goroutineTolerance = 10
	// targetDeadRatio is the most the step overhead's p50 with the member
	// stopped may be, as a multiple of the p50 before it stopped in the
	// same phase, for the overhead to count as kept.
	targetDeadRatio = 1.2
	// deadPods is the number of pods the FederationCluster "dead" places
	// in the member that is stopped.
	deadPods = 2
	// deadBaselineRounds is the number of upgrades with every member up
	// before the stop, and again after it.
	deadBaselineRounds = 5
	// logEvery is how often the dead period's progress is logged.
	logEvery = 30 * time.Second
	// upgradeTimeout bounds one upgrade of item 6's FederationCluster.
	upgradeTimeout = 2 * time.Minute
)

// goroutineSample is the manager at one moment of item 6.
type goroutineSample struct {
	at                    time.Time
	goroutines, rss, cpu  float64
	deadConnected, scrape bool
}

// deadResult is item 6's outcome.
type deadResult struct {
	// members are the manager's members; dead the one stopped.
	members []string
	dead    string
	connect connectRun
	// before and after are the upgrades with every member up, before the
	// stop and after SIGCONT; during those with the member stopped;
	// failure says why the upgrades stopped early.
	before, during, after []rolloutResult
	failure               string
	samples               []goroutineSample
	// stoppedAt is when SIGSTOP was sent; detected the time from it to
	// the manager's gauge showing the member disconnected (0 if it never
	// did); period how long the member stayed stopped; reconnected the
	// time from SIGCONT to the gauge back at 1.
	stoppedAt                       time.Time
	detected, period, reconnected   time.Duration
	profile                         *profile
	profileNote                     string
	deadStatus                      string
	reconnectedOK, detectedInPeriod bool
}

// deadPhase runs item 6.
//
//nolint:gocyclo // One measurement from start to end, step by step, each with its own failure to report; split up it would be harder to follow.
func (b *bench) deadPhase(ctx context.Context) error {
	lab := b.options.members[:2]
	nAPI := b.deadMembers - len(lab)
	if err := b.ensureFleet(ctx); err != nil {
		return err
	}
	// Item 5's larger fleet is not needed any more: its idle apiservers
	// would only take CPU from the lab.
	b.fleet.shrink(nAPI)
	if err := b.fleet.grow(ctx, nAPI, startParallel); err != nil {
		return err
	}
	dead := b.fleet.members[nAPI-1]
	res := &b.res.dead
	res.dead = dead.name

	// Registration: the lab's members with the Secrets hack/lab.sh
	// registered for the main manager, copied; the apiserver-only members
	// with the fleet's kubeconfigs.
	defer b.deleteHostNamespace(context.Background(), deadNamespace)
	kcs, err := b.labKubeconfigs(ctx, lab)
	if err != nil {
		return err
	}
	maps.Copy(kcs, b.fleet.kubeconfigs(nAPI))
	res.members = slices.Sorted(maps.Keys(kcs))
	if err := b.registerMembers(ctx, deadNamespace, kcs); err != nil {
		return err
	}

	m, err := b.startManager(deadNamespace, fmt.Sprintf("item 6, %d members, %s stopped", len(kcs), dead.name))
	if err != nil {
		return err
	}
	defer m.stop()
	if res.connect, err = waitConnected(ctx, m, res.members); err != nil {
		return err
	}
	b.logf("Item 6 manager: %d members connected after %s", len(res.members), ms(res.connect.all))

	// The workloads. Deleted while the manager runs, so that its cleanup
	// removes their pods (this defer runs before the manager's stop).
	live := stepFederation("live", components, lab, int32(b.perMember), imagePrefix+"live-0")
	deadFC := stepFederation("dead", []string{"d"}, []string{dead.name}, deadPods, imagePrefix+"dead-0")
	obs, err := b.observeFederation(ctx, live.Name)
	if err != nil {
		return err
	}
	defer obs.Stop()
	var created []client.ObjectKey
	defer func() { b.deleteFederations(created, m, time.Minute) }()
	for _, fc := range []*v1alpha1.FederationCluster{live, deadFC} {
		if err := b.host.Create(ctx, fc); err != nil {
			return fmt.Errorf("creating FederationCluster %s: %w", fc.Name, err)
		}
		created = append(created, client.ObjectKeyFromObject(fc))
	}
	sys := fedopSystem(b.host, live, obs)
	if err := b.waitDeadSetup(ctx, sys, dead); err != nil {
		return err
	}

	upgrade := func(round int) (rolloutResult, error) {
		o, err := runUpgrade(ctx, sys, fmt.Sprintf("%slive-%d", imagePrefix, round), 0, upgradeTimeout)
		if err != nil {
			return o, err
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return o, sys.settled(sctx)
	}
	// The baseline is measured on both sides of the stop, so that a drift
	// of the machine's load over the period does not pass for the dead
	// member's effect. A first upgrade warms the caches and connections up
	// and is not counted.
	round := 1
	if _, err := upgrade(round); err != nil {
		return fmt.Errorf("before the member stopped: %w", err)
	}
	baseline := func(when string) ([]rolloutResult, error) {
		var out []rolloutResult
		for range deadBaselineRounds {
			round++
			o, err := upgrade(round)
			if err != nil {
				return out, fmt.Errorf("%s: %w", when, err)
			}
			out = append(out, o)
			b.logf("Item 6, round %d, every member up (%s): step overhead p50 %s p99 %s",
				round, when, ms(e2e.Percentile(o.steps.overheads, 50)), ms(e2e.Percentile(o.steps.overheads, 99)))
		}
		return out, nil
	}
	if res.before, err = baseline("before the stop"); err != nil {
		return err
	}

	smp := startSampler(m, dead.name)
	defer smp.stop()
	if err := dead.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	res.stoppedAt = time.Now()
	// SIGCONT on every way out, so that cleanup finds a live process; the
	// fleet's stop sends one too.
	defer func() {
		if dead.stopped {
			_ = dead.signal(syscall.SIGCONT)
		}
	}()
	b.logf("SIGSTOPped %s (pid %d) for %s", dead.name, dead.proc.pid(), b.deadDuration)
	// A spec change of the FederationCluster whose pods are in the stopped
	// member, so that its reconciles try to act there.
	deadSys := fedopSystem(b.host, deadFC, nil)
	if err := deadSys.upgrade(ctx, imagePrefix+"dead-1", 0); err != nil {
		return err
	}

	lastLog, logged := time.Now(), 0
	for time.Since(res.stoppedAt) < b.deadDuration {
		round++
		o, err := upgrade(round)
		if err != nil && ctx.Err() != nil {
			return err // interrupted
		}
		if err != nil {
			// What the stopped member did to the other FederationCluster
			// is the finding: report it rather than abort the run.
			res.failure = fmt.Sprintf("upgrade %d, %s after the member stopped: %v", round, ms(time.Since(res.stoppedAt)), err)
			b.logf("Item 6: %s", res.failure)
			break
		}
		res.during = append(res.during, o)
		// Hundreds of rounds: one line every logEvery, with the rounds
		// since the last.
		if time.Since(lastLog) >= logEvery {
			recent := res.during[logged:]
			overlaps := 0
			for _, r := range recent {
				overlaps += r.steps.overlaps
			}
			last := smp.last()
			b.logf("Item 6, %s stopped for %s: rounds %d to %d, step overhead p50 %s (median of rounds), max %s, %d overlaps; "+
				"manager %0.f goroutines, RSS %s, sees %s connected: %t",
				dead.name, time.Since(res.stoppedAt).Round(time.Second), round-len(recent)+1, round, ms(median(roundPercentiles(recent, 50))),
				ms(slices.Max(roundPercentiles(recent, 100))), overlaps, last.goroutines, mib(last.rss), dead.name, last.deadConnected)
			lastLog, logged = time.Now(), len(res.during)
		}
	}
	res.period = time.Since(res.stoppedAt)
	res.samples = smp.stop()
	if at := smp.disconnectedAt(); !at.IsZero() {
		res.detected = at.Sub(res.stoppedAt)
		res.detectedInPeriod = true
	}
	var fc v1alpha1.FederationCluster
	if err := b.host.Get(ctx, client.ObjectKeyFromObject(deadFC), &fc); err == nil {
		for _, c := range fc.Status.Conditions {
			if c.Type == v1alpha1.ConditionMembersConnected {
				res.deadStatus = fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason)
			}
		}
	}

	// A goroutine profile when the count grew, to name what holds them.
	if g := goroutineTrend(res.samples, res.stoppedAt); g.growth > goroutineTolerance {
		if m.pprofURL == "" {
			res.profileNote = "fedop-manager serves no pprof endpoint (no --pprof-bind-address flag), so no goroutine profile was taken."
		} else if p, err := fetchProfile(ctx, m.pprofURL, "goroutine", "", b.labDir, "goroutines-dead-member.pb.gz", "",
			fmt.Sprintf("goroutines after %s with %s stopped", res.period.Round(time.Second), dead.name)); err != nil {
			res.profileNote = fmt.Sprintf("taking a goroutine profile failed: %v", err)
		} else {
			res.profile = &p
		}
	}

	if err := dead.signal(syscall.SIGCONT); err != nil {
		return err
	}
	cont := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = waitMetrics(wctx, m.metricsURL, dead.name+" connected again", func(s scrape) bool { return s.connected(dead.name) })
	if err != nil {
		b.logf("SIGCONT %s: %v", dead.name, err)
		return nil
	}
	res.reconnected, res.reconnectedOK = time.Since(cont), true
	b.logf("SIGCONT %s: connected again after %s", dead.name, ms(res.reconnected))
	if res.failure == "" {
		res.after, err = baseline("after SIGCONT")
	}
	return err
}

// waitDeadSetup waits until the live FederationCluster's pods are all
// Ready and recorded so, and the dead one has pods in its member.
func (b *bench) waitDeadSetup(ctx context.Context, live *system, dead *apiMember) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := live.obs.waitRolledOut(ctx, imagePrefix+"live-0", live.pods); err != nil {
		return fmt.Errorf("FederationCluster live: creating: %w", err)
	}
	if err := live.settled(ctx); err != nil {
		return err
	}
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelInstance: "dead"}).String()
	var pods *corev1.PodList
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, lastErr = dead.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return lastErr == nil && len(pods.Items) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods of FederationCluster dead in %s: %w (last error: %v)", dead.name, err, lastErr)
	}
	b.logf("FederationCluster live (%d pods) is Ready; dead has %d pods in %s, never to be Ready (no scheduler there)", live.pods, len(pods.Items), dead.name)
	return nil
}

// sampler reads the manager's metrics every samplePoll: whether it sees
// the dead member connected, and every goroutineEvery its goroutines and
// RSS.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	// mu guards samples and disconnected.
	mu           sync.Mutex
	samples      []goroutineSample
	disconnected time.Time
}

// startSampler starts sampling manager m, with a first sample at once.
func startSampler(m *managerRun, dead string) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	c := &http.Client{Timeout: 2 * time.Second}
	take := func(keep bool) {
		g := goroutineSample{at: time.Now()}
		sc, err := scrapeWith(ctx, c, m.metricsURL)
		if err == nil {
			g.scrape = true
			g.goroutines, _ = sc.sum("go_goroutines", nil)
			g.cpu, _ = sc.sum("process_cpu_seconds_total", nil)
			g.deadConnected = sc.connected(dead)
		}
		g.rss, _ = rssBytes(m.proc.pid())
		s.mu.Lock()
		defer s.mu.Unlock()
		if g.scrape && !g.deadConnected && s.disconnected.IsZero() {
			s.disconnected = g.at
		}
		if keep {
			s.samples = append(s.samples, g)
		}
	}
	// The first sample is taken before returning: it is the one from
	// before the member stops.
	take(true)
	go func() {
		defer close(s.done)
		defer c.CloseIdleConnections()
		lastKept := time.Now()
		// A sample every samplePoll (not sliding: however long a scrape
		// takes) until stop; the condition never holds.
		_ = wait.PollUntilContextCancel(ctx, samplePoll, false, func(context.Context) (bool, error) {
			keep := time.Since(lastKept) >= goroutineEvery-samplePoll/2
			take(keep)
			if keep {
				lastKept = time.Now()
			}
			return false, nil
		})
	}()
	return s
}

// stop ends the sampling and returns the samples kept. It may be called
// more than once.
func (s *sampler) stop() []goroutineSample {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

func (s *sampler) last() goroutineSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return goroutineSample{}
	}
	return s.samples[len(s.samples)-1]
}

func (s *sampler) disconnectedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnected
}

// trend is what item 6's goroutine samples say.
type trend struct {
	// before is the sample taken just before the member stopped; first,
	// last and max are over the samples after it.
	before, first, last, maxCount float64
	n                             int
	// growth is the median of the last quarter's samples minus the first
	// quarter's; perMinute the least-squares slope over all of them.
	growth, perMinute float64
}

// goroutineTrend summarises the samples of the member stopped at stopped.
func goroutineTrend(samples []goroutineSample, stopped time.Time) trend {
	var t trend
	var xs, ys []float64
	for _, s := range samples {
		if !s.scrape {
			continue
		}
		if s.at.Before(stopped) {
			t.before = s.goroutines
			continue
		}
		xs = append(xs, s.at.Sub(stopped).Minutes())
		ys = append(ys, s.goroutines)
	}
	t.n = len(ys)
	if t.n == 0 {
		return t
	}
	t.first, t.last, t.maxCount = ys[0], ys[len(ys)-1], slices.Max(ys)
	q := max(1, len(ys)/4)
	t.growth = median(ys[len(ys)-q:]) - median(ys[:q])
	if len(xs) > 1 {
		mx, my := mean(xs), mean(ys)
		num, den := 0.0, 0.0
		for i := range xs {
			num += (xs[i] - mx) * (ys[i] - my)
			den += (xs[i] - mx) * (xs[i] - mx)
		}
		if den > 0 {
			t.perMinute = num / den
		}
	}
	return t
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// deleteFederations deletes the FederationClusters keys while manager m
// runs, waits up to timeout for its cleanup to remove them, and drops the
// finalizers of what is left; at once if m has exited (an interrupt from
// the terminal reaches it too), as nothing would clean up then.
func (b *bench) deleteFederations(keys []client.ObjectKey, m *managerRun, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	for _, k := range keys {
		fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		if err := b.host.Delete(ctx, fc); err != nil && !apierrors.IsNotFound(err) {
			b.logf("Deleting FederationCluster %s: %v", k, err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, timeout)
	defer wcancel()
	for _, k := range keys {
		// The Get with ctx, not wctx: once the wait has timed out, each key
		// is still looked at once.
		err := wait.PollUntilContextCancel(wctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
			if apierrors.IsNotFound(b.host.Get(ctx, k, &v1alpha1.FederationCluster{})) {
				return true, nil
			}
			if m.proc.exited() {
				return false, errors.New("the manager exited")
			}
			return false, nil
		})
		if err != nil {
			b.logf("FederationCluster %s was not cleaned up by the manager; dropping its finalizers", k)
			obj := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
			if err := dropFinalizers(ctx, b.host, obj); err != nil {
				b.logf("%v", err)
			}
		}
	}
}

// dropFinalizers removes every finalizer of fc.
func dropFinalizers(ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := c.Patch(ctx, fc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("dropping the finalizers of FederationCluster %s: %w", fc.Name, err)
	}
	return nil
}
