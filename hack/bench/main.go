package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	labDir, metricsURL, pprofURL, out, microFile, kwokVersion, commit string
	members                                                           []string
	managerPID                                                        int
	rounds, delayRounds                                               int
	delay                                                             time.Duration
	perMember                                                         int
	memBase, memTotal, unrelated                                      int
	// scriptStart is when hack/bench.sh started, in Unix seconds.
	scriptStart int64
	// items are the items to measure (1 to 8).
	items map[int]bool
	// binDir holds etcd and kube-apiserver; managerBin is the
	// fedop-manager that items 5 and 6 start.
	binDir, managerBin string
	// memberSizes are item 5's member counts, ascending; memberRounds the
	// manager starts per size.
	memberSizes  []int
	memberRounds int
	// deadMembers is item 6's member count (the lab's two and
	// apiserver-only ones); deadDuration how long one stays stopped.
	deadMembers  int
	deadDuration time.Duration
	// replacements is item 7's number of pod IP changes to measure.
	replacements int
	// idleWindow is how long item 8 watches each of item 5's managers
	// idle.
	idleWindow time.Duration
	// restartRounds is item 10's SIGKILLs per member count; restartFleet
	// the apiserver-only members of its second count.
	restartRounds, restartFleet int
	// manyFederations is item 11's number of FederationClusters;
	// manyRounds how many times they are all upgraded at once.
	manyFederations, manyRounds int
}

func parseFlags() (options, error) {
	var o options
	var members string
	flag.StringVar(&o.labDir, "lab-dir", ".lab/bench", "The lab directory: host.kubeconfig and <member>.kubeconfig.")
	flag.StringVar(&members, "members", "k8s-a,k8s-b", "The member clusters, comma-separated; the first also runs the reference StatefulSet.")
	flag.IntVar(&o.managerPID, "manager-pid", 0, "The pid of the running fedop-manager (its RSS is read from /proc).")
	flag.StringVar(&o.metricsURL, "metrics-url", "", "The manager's metrics endpoint, e.g. http://127.0.0.1:18380/metrics.")
	flag.StringVar(&o.pprofURL, "pprof-url", "", "The manager's pprof endpoint (http://HOST:PORT/debug/pprof), if it serves one: a CPU profile of creating the memory pods and a heap profile with them are then taken and summarised.")
	flag.IntVar(&o.rounds, "rounds", 3, "Upgrades of each system with readiness immediate (items 1 and 3).")
	flag.IntVar(&o.delayRounds, "delay-rounds", 3, "Upgrades of each system with the readiness delay (item 2).")
	flag.DurationVar(&o.delay, "delay", time.Second, "The readiness delay D of every new pod in item 2.")
	flag.IntVar(&o.perMember, "per-member", 6, "Pods per component per member of the FederationCluster of items 1 to 3 (2 components).")
	flag.IntVar(&o.memBase, "memory-base", 1000, "Managed pods of item 4's first measurement.")
	flag.IntVar(&o.memTotal, "memory-pods", 10000, "Managed pods of item 4's second measurement.")
	flag.IntVar(&o.unrelated, "unrelated-pods", 10000, "Pods fedop does not manage, created in the last member (item 4).")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "The Markdown report to write.")
	flag.StringVar(&o.microFile, "micro", "", "Output of `go test -bench` to include in the report.")
	flag.StringVar(&o.kwokVersion, "kwok-version", "", "kwok's version, for the report.")
	flag.StringVar(&o.commit, "commit", "", "fedop's commit, for the report.")
	flag.Int64Var(&o.scriptStart, "script-start", 0, "When hack/bench.sh started (Unix seconds), for the report.")
	var items, sizes string
	flag.StringVar(&items, "items", "1-11", "The items to measure: numbers and ranges, e.g. 1-4 or 5,6. Items 1, 3 and 9 are measured together, and so are 5 and 8; 2 and 4 need 1.")
	flag.StringVar(&o.binDir, "bin-dir", "bin", "Where etcd and kube-apiserver are, for the apiserver-only members of items 5 and 6.")
	flag.StringVar(&o.managerBin, "manager-bin", "bin/fedop-manager", "The fedop-manager that items 5 and 6 start, with member namespaces of their own.")
	flag.StringVar(&sizes, "members-sizes", "10,50", "Item 5: the numbers of apiserver-only members a manager connects to, comma-separated.")
	flag.IntVar(&o.memberRounds, "members-rounds", 3, "Item 5: manager starts per number of members.")
	flag.IntVar(&o.deadMembers, "dead-members", 10, "Item 6: the manager's members, the lab's two full clusters included; the others are apiserver-only, one of them is stopped.")
	flag.DurationVar(&o.deadDuration, "dead-duration", 10*time.Minute,
		"Item 6: how long the member stays SIGSTOPped while the other FederationCluster is upgraded (section 6 of the report says why 10m, not 3m).")
	flag.IntVar(&o.replacements, "discovery-replacements", 24, "Item 7: pod replacements whose new IP is followed into every member's EndpointSlices (at least 20).")
	flag.DurationVar(&o.idleWindow, "idle-window", 20*time.Second, "Item 8: how long each of item 5's managers is watched idle, once every member is connected.")
	flag.IntVar(&o.restartRounds, "restart-rounds", 5, "Item 10: SIGKILLs and restarts of the manager mid-rollout, per member count.")
	flag.IntVar(&o.restartFleet, "restart-members", 50, "Item 10: the apiserver-only members registered beside the lab's two for the second count.")
	flag.IntVar(&o.manyFederations, "many-federations", 200, "Item 11: FederationClusters of 6 pods (3 in each of the lab's two members) upgraded at once.")
	flag.IntVar(&o.manyRounds, "many-rounds", 2, "Item 11: upgrades of all of them at once.")
	flag.Parse()
	o.members = strings.Split(members, ",")
	var err error
	if o.items, err = parseItems(items); err != nil {
		return o, err
	}
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return o, fmt.Errorf("--members-sizes: %q is not a positive number", f)
		}
		o.memberSizes = append(o.memberSizes, n)
	}
	slices.Sort(o.memberSizes)
	o.memberSizes = slices.Compact(o.memberSizes)
	if o.labDir, err = filepath.Abs(o.labDir); err != nil {
		return o, err
	}
	switch {
	case (o.items[1] || o.items[7] || o.items[11]) && (o.managerPID == 0 || o.metricsURL == ""):
		return o, errors.New("--manager-pid and --metrics-url are required for items 1 to 4, 7 and 11")
	case o.restartRounds < 2 || o.manyRounds < 1:
		return o, errors.New("--restart-rounds must be at least 2 (a median, never one run) and --many-rounds at least 1")
	case o.restartFleet < 1 || o.manyFederations < 1:
		return o, errors.New("--restart-members and --many-federations must be positive")
	case len(o.members) < 2:
		return o, errors.New("--members needs at least two members")
	case o.rounds < 2 || o.delayRounds < 2:
		return o, errors.New("--rounds and --delay-rounds must be at least 2: a benchmark reports medians, never one run")
	case o.memBase <= 0 || o.memTotal <= o.memBase:
		return o, errors.New("--memory-pods must be larger than --memory-base")
	case o.memberRounds < 2:
		return o, errors.New("--members-rounds must be at least 2: a benchmark reports medians, never one run")
	case o.deadMembers < 3:
		return o, errors.New("--dead-members must be at least 3: the lab's two and the one stopped")
	case o.deadDuration <= 0:
		return o, errors.New("--dead-duration must be positive")
	case o.replacements < minReplacements:
		return o, fmt.Errorf("--discovery-replacements must be at least %d: a p99 over fewer is no p99", minReplacements)
	case o.idleWindow < 5*time.Second:
		return o, errors.New("--idle-window must be at least 5s: CPU time is counted in 10 ms ticks")
	}
	return o, nil
}

// parseItems parses --items: comma-separated numbers and ranges of 1 to 8.
// Item 3 is counted over item 1's upgrades, so either means both; items 2
// and 4 reuse item 1's workloads. Item 8 watches item 5's managers idle,
// so either means both too.
func parseItems(s string) (map[int]bool, error) {
	items := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(f), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 1 || b > lastItem || a > b {
			return nil, fmt.Errorf("--items: %q is not an item or range of items 1 to %d", f, lastItem)
		}
		for i := a; i <= b; i++ {
			items[i] = true
		}
	}
	if items[1] || items[3] {
		items[1], items[3] = true, true
	}
	if items[5] || items[8] {
		items[5], items[8] = true, true
	}
	// Item 9 (host writes on a step's critical path) is counted over item
	// 1's and 2's upgrades.
	if items[9] {
		items[1] = true
	}
	if items[1] {
		items[3], items[9] = true, true
	}
	if (items[2] || items[4]) && !items[1] {
		return nil, errors.New("--items: items 2 and 4 need item 1")
	}
	return items, nil
}

// lastItem is the highest item number.
const lastItem = 11

// bench holds the clients and what was measured so far.
type bench struct {
	options
	started time.Time

	hostCfg    *rest.Config
	host       client.Client
	memberCfgs map[string]*rest.Config
	members    map[string]kubernetes.Interface
	// hosts maps each API server's host:port to its cluster's name, to
	// split the manager's requests by cluster.
	hosts map[string]string

	res results

	// managerPprof is whether managerBin serves profiles.
	managerPprof bool
	// fleet is the apiserver-only members of items 5 and 6, once started.
	fleet *fleet
	// floor is the floor controller of items 1 and 2; stepFC the name of
	// their FederationCluster, whose writes item 9 counts.
	floor  *floorController
	stepFC string
	// cleanups run when the run ends, however it ends, last first.
	cleanups []func()
}

// cleanup registers f to run when the run ends, even on error or
// interrupt.
func (b *bench) cleanup(f func()) { b.cleanups = append(b.cleanups, f) }

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{options: o, started: time.Now(), memberCfgs: map[string]*rest.Config{}, members: map[string]kubernetes.Interface{}, hosts: map[string]string{}}
	defer func() {
		for i := len(b.cleanups) - 1; i >= 0; i-- {
			b.cleanups[i]()
		}
	}()
	if err := b.connect(ctx); err != nil {
		return err
	}
	if err := b.machine(); err != nil {
		return err
	}
	if o.managerPID != 0 {
		if b.res.managerCmdline, err = commandLine(o.managerPID); err != nil {
			return fmt.Errorf("the main fedop-manager's command line: %w", err)
		}
		if b.res.managerProbePeriod, err = probePeriod(b.res.managerCmdline, defaultProbePeriod); err != nil {
			return err
		}
	}
	for _, p := range b.phases() {
		b.logf("== %s", p.name)
		start := time.Now()
		err := p.run(ctx)
		b.res.phases = append(b.res.phases, phaseTime{p.name, time.Since(start)})
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	if o.microFile != "" {
		data, err := os.ReadFile(o.microFile)
		if err != nil {
			return err
		}
		b.res.micro = string(data)
	}
	b.res.total = time.Since(b.started)
	b.res.machine.loadEnd, b.res.machine.othersEnd = loadAverage(), b.otherAPIServers()
	rows := b.res.rows(o)
	fmt.Println()
	fmt.Print(textTable(rows))
	md := b.res.markdown(o, rows)
	if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
		return err
	}
	b.logf("Wrote %s", o.out)
	return nil
}

// phase is one step of a run, timed for the report.
type phase struct {
	name string
	run  func(context.Context) error
}

// phases returns the run's phases for the items asked for, in order.
func (b *bench) phases() []phase {
	o := b.options
	stopMain := o.items[5] || o.items[6] || o.items[10]
	if stopMain {
		b.managerPprof = servesPprof(o.managerBin)
	}
	checkMain := func(context.Context) error {
		if !managerAlive(o.managerPID) {
			return fmt.Errorf("the main fedop-manager (pid %d) exited during the benchmark", o.managerPID)
		}
		return nil
	}
	var phases []phase
	for _, p := range []struct {
		when bool
		phase
	}{
		{o.items[1] || o.items[7] || o.items[11], phase{"wait for the manager", b.waitManager}},
		{o.items[1], phase{"step overhead, API cost (items 1, 3)", b.stepPhase}},
		{o.items[2], phase{"rollout efficiency (item 2)", b.delayPhase}},
		{o.items[1], phase{"stop the floor controller, delete its pods", b.stopFloor}},
		// Items 7 and 11 before item 4, whose 20,000 pods would load the
		// lab's members; they delete their FederationClusters when done, so
		// item 4 finds only its own pods and item 1's.
		{o.items[7], phase{"discovery (item 7)", b.discoveryPhase}},
		{o.items[11], phase{fmt.Sprintf("%d FederationClusters upgraded at once (item 11)", o.manyFederations), b.manyPhase}},
		{o.items[4], phase{"memory (item 4)", b.memoryPhase}},
		{o.managerPID != 0 && !stopMain, phase{"check the main manager", checkMain}},
		{stopMain, phase{"stop the main manager, delete items 1-4's workloads", func(ctx context.Context) error {
			if err := b.stopMainManager(ctx); err != nil {
				return err
			}
			return b.clearWorkloads(ctx)
		}}},
		{o.items[5], phase{"members (item 5)", b.membersPhase}},
		// Item 10 after item 5, whose apiserver-only members it reuses, and
		// before item 6, which shrinks them.
		{o.items[10], phase{"manager restart after a SIGKILL (item 10)", b.restartPhase}},
		{o.items[6], phase{"a dead member (item 6)", b.deadPhase}},
	} {
		if p.when {
			phases = append(phases, p.phase)
		}
	}
	return phases
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// connect builds the clients of the host and every member from the lab's
// kubeconfigs.
func (b *bench) connect(ctx context.Context) error {
	load := func(name string) (*rest.Config, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(b.labDir, name+".kubeconfig"))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of %s: %w", name, err)
		}
		u, err := url.Parse(cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of %s: %w", name, err)
		}
		b.hosts[u.Host] = name
		return cfg, nil
	}
	var err error
	if b.hostCfg, err = load(hostCluster); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if b.host, err = client.New(fastConfig(b.hostCfg), client.Options{Scheme: scheme}); err != nil {
		return err
	}
	for _, m := range b.options.members {
		cfg, err := load(m)
		if err != nil {
			return err
		}
		b.memberCfgs[m] = cfg
		if b.members[m], err = kubernetes.NewForConfig(fastConfig(cfg)); err != nil {
			return err
		}
	}
	hostCS, err := kubernetes.NewForConfig(fastConfig(b.hostCfg))
	if err != nil {
		return err
	}
	for _, cs := range append([]kubernetes.Interface{hostCS}, slices.Collect(maps.Values(b.members))...) {
		if err := ensureNamespace(ctx, cs, namespace); err != nil {
			return err
		}
	}
	return nil
}

// machine records the machine and the versions the report names.
func (b *bench) machine() error {
	m := &b.res.machine
	m.cpus = goruntime.NumCPU()
	m.memory, m.cpuModel = memoryAndCPUModel()
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(data))
	}
	m.goVersion = goruntime.Version()
	cs, err := kubernetes.NewForConfig(b.hostCfg)
	if err != nil {
		return err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("the host's version: %w", err)
	}
	m.kubeVersion = v.GitVersion
	m.kwokVersion, m.commit = b.kwokVersion, b.commit
	m.date = b.started.UTC().Format(time.RFC3339)
	m.loadStart, m.othersStart = loadAverage(), b.otherAPIServers()
	return nil
}

// waitManager waits until the manager's metrics say every member is
// connected: its member caches have synced.
func (b *bench) waitManager(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := waitMetrics(ctx, b.metricsURL, "every member connected", func(s scrape) bool {
		for _, m := range b.options.members {
			if !s.connected(m) {
				return false
			}
		}
		return true
	})
	return err
}

// stepPhase runs items 1 and 3: a FederationCluster and a StatefulSet of
// the same size, upgraded in turn, rounds times each, with readiness
// immediate; the manager's requests are counted over every upgrade of
// either (the StatefulSet's upgrades are the manager's idle windows).
func (b *bench) stepPhase(ctx context.Context) error {
	if err := b.setupSystems(ctx); err != nil {
		return err
	}
	opBefore, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return err
	}
	got, err := b.upgradeRounds(ctx, b.rounds, "step", 0)
	if err != nil {
		return err
	}
	b.res.stepFedop, b.res.stepSTS, b.res.stepFloor = got[b.res.fedop], got[b.res.sts], got[b.res.floor]
	opAfter, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return err
	}
	var n float64
	b.res.operatorMean, n = histogramMean(opBefore, opAfter, "fedop_rollout_step_overhead_seconds", nil)
	b.res.operatorSteps = n
	b.res.stepPhases = nil
	for _, phase := range stepPhaseNames {
		if mean, n := histogramMean(opBefore, opAfter, "fedop_rollout_step_phase_seconds", map[string]string{"phase": phase}); n > 0 {
			b.res.stepPhases = append(b.res.stepPhases, phaseMean{phase, mean, n})
		}
	}
	return nil
}

// upgradeRounds upgrades every system in turn, rounds times, every new
// pod Ready delay after it is scheduled (0: at once), and returns each
// system's measured upgrades.
func (b *bench) upgradeRounds(ctx context.Context, rounds int, tag string, delay time.Duration) (map[*system][]windowResult, error) {
	out := map[*system][]windowResult{}
	for r := 1; r <= rounds; r++ {
		image := fmt.Sprintf("%s%s-%d", imagePrefix, tag, r)
		for _, s := range b.res.systems() {
			w, err := b.measuredUpgrade(ctx, s, image, delay)
			if err != nil {
				return nil, err
			}
			if err := b.afterUpgrade(s, &w); err != nil {
				return nil, err
			}
			o := w.rollout
			b.logf("Round %d, %s, readiness delay %s: %d deletions in %s (floor N x D %s), step overhead p50 %s p90 %s max %s, %d overlaps; manager requests: %s",
				r, s.name, delay, o.steps.deletions, ms(o.total()), time.Duration(s.pods)*delay, ms(e2e.Percentile(o.steps.overheads, 50)),
				ms(e2e.Percentile(o.steps.overheads, 90)), ms(e2e.Percentile(o.steps.overheads, 100)), o.steps.overlaps, formatRequests(w.requests))
			for _, line := range o.steps.overlapped {
				b.logf("  overlap: %s", line)
			}
			out[s] = append(out[s], w)
		}
	}
	return out, nil
}

// stepPhaseNames are the phases of fedop_rollout_step_phase_seconds, in
// the order a step goes through them (federation/metrics.go).
var stepPhaseNames = []string{"queue", "observe", "plan", "status", "act", "delete"}

// phaseMean is the manager's mean time in one phase of a step.
type phaseMean struct {
	phase string
	mean  time.Duration
	steps float64
}

// setupSystems creates the FederationCluster and the StatefulSet of items 1
// to 3, with observers of their pods, and waits for every pod to be Ready.
func (b *bench) setupSystems(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	image := imagePrefix + "step-0"
	fc := stepFederation("step", components, b.options.members[:2], int32(b.perMember), image)
	first := b.options.members[0]
	// The reference has as many pods as the federation, all in one member.
	sts := referenceStatefulSet("ref", int32(2*2*b.perMember), image)

	fedopObs, err := b.observeFederation(ctx, fc.Name)
	if err != nil {
		return err
	}
	stsObs, err := startObserver(ctx, map[string]*rest.Config{first: b.memberCfgs[first]},
		labels.SelectorFromSet(sts.Spec.Selector.MatchLabels).String())
	if err != nil {
		return err
	}
	b.res.observers = append(b.res.observers, fedopObs, stsObs)
	if err := b.host.Create(ctx, fc); err != nil {
		return fmt.Errorf("creating FederationCluster %s: %w", fc.Name, err)
	}
	if _, err := b.members[first].AppsV1().StatefulSets(namespace).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StatefulSet %s in %s: %w", sts.Name, first, err)
	}
	b.res.fedop = fedopSystem(b.host, fc, fedopObs)
	b.res.sts = statefulSetSystem(b.members[first], sts, stsObs)
	b.res.stsMember = first
	if err := b.setupFloor(ctx, image, fc.Name); err != nil {
		return err
	}
	for _, s := range b.res.systems() {
		if _, err := s.obs.waitRolledOut(ctx, image, s.pods); err != nil {
			return fmt.Errorf("%s: creating: %w", s.name, err)
		}
		if err := s.settled(ctx); err != nil {
			return err
		}
	}
	b.logf("FederationCluster %s (%d pods over %s) and StatefulSet %s (%d pods in %s) are Ready",
		fc.Name, b.res.fedop.pods, strings.Join(b.options.members[:2], ", "), sts.Name, b.res.sts.pods, first)
	return nil
}

// measuredUpgrade is one upgrade with the manager's requests counted from
// just before it is written until the controller recorded it complete, and
// a short grace for the events it sends asynchronously.
func (b *bench) measuredUpgrade(ctx context.Context, s *system, image string, delay time.Duration) (windowResult, error) {
	before, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return windowResult{}, err
	}
	timeout := 2*time.Minute + time.Duration(s.pods)*delay*3
	o, err := runUpgrade(ctx, s, image, delay, timeout)
	if err != nil {
		return windowResult{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.settled(sctx); err != nil {
		return windowResult{}, err
	}
	select {
	case <-ctx.Done():
		return windowResult{}, ctx.Err()
	case <-time.After(eventGrace):
	}
	after, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return windowResult{}, err
	}
	return windowResult{rollout: o, window: after.at.Sub(before.at), requests: requestDelta(before, after, b.hosts)}, nil
}

// eventGrace is how long after a rollout is recorded complete its requests
// are still counted: the event recorder writes events in the background.
const eventGrace = time.Second

// delayPhase runs item 2: the same upgrades with every new pod Ready only
// after the readiness delay.
func (b *bench) delayPhase(ctx context.Context) error {
	before, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return err
	}
	got, err := b.upgradeRounds(ctx, b.delayRounds, "delay", b.delay)
	if err != nil {
		return err
	}
	after, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return err
	}
	for _, when := range []string{"record", "acknowledge"} {
		if mean, n := histogramMean(before, after, "fedop_status_write_seconds", map[string]string{"when": when}); n > 0 {
			b.res.delayWrites = append(b.res.delayWrites, phaseMean{when, mean, n})
		}
	}
	b.res.delayFedop, b.res.delaySTS, b.res.delayFloor = got[b.res.fedop], got[b.res.sts], got[b.res.floor]
	for _, o := range b.res.observers {
		o.Stop()
	}
	return nil
}

// memoryPhase runs item 4: the manager's memory with memBase managed pods,
// then with unrelated pods added in the last member, then with memTotal
// managed pods.
func (b *bench) memoryPhase(ctx context.Context) error {
	members := b.options.members
	perFC := int32(1000) // two placements of 500
	if b.memBase%int(perFC) != 0 || b.memTotal%int(perFC) != 0 {
		return fmt.Errorf("--memory-base and --memory-pods must be multiples of %d", perFC)
	}
	perMember := perFC / int32(len(members))
	other := b.res.fedop.pods

	if err := b.sampleMemory(ctx, "before", other, 0, 0); err != nil {
		return err
	}

	var keys []client.ObjectKey
	addFederations := func(total int) (time.Duration, error) {
		start := time.Now()
		from := len(keys)
		for i := from; i < total/int(perFC); i++ {
			fc := memoryFederation(fmt.Sprintf("mem-%d", i), members, perMember)
			if err := b.host.Create(ctx, fc); err != nil {
				return 0, fmt.Errorf("creating FederationCluster %s: %w", fc.Name, err)
			}
			keys = append(keys, client.ObjectKeyFromObject(fc))
		}
		b.logf("Created FederationClusters mem-%d to mem-%d: %d managed pods in all", from, len(keys)-1, total)
		wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
		if err := waitFederationsReady(wctx, b.host, keys, perFC, b.logf); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}

	took, err := addFederations(b.memBase)
	if err != nil {
		return err
	}
	if err := b.sampleMemory(ctx, memLabel(b.memBase, 0), other+b.memBase, 0, took); err != nil {
		return err
	}

	last := members[len(members)-1]
	uobs, err := startObserver(ctx, map[string]*rest.Config{last: b.memberCfgs[last]}, unrelatedLabel+"=true")
	if err != nil {
		return err
	}
	defer uobs.Stop()
	start := time.Now()
	if err := createUnrelated(ctx, b.members[last], b.unrelated, 32); err != nil {
		return err
	}
	b.logf("Created %d unrelated pods in %s in %s", b.unrelated, last, ms(time.Since(start)))
	allReady := func(context.Context) (bool, error) { return uobs.readyCount() >= b.unrelated, nil }
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, allReady); err != nil {
		return fmt.Errorf("waiting for %d unrelated pods to be Ready (%d are): %w", b.unrelated, uobs.readyCount(), err)
	}
	if err := b.sampleMemory(ctx, memLabel(b.memBase, b.unrelated), other+b.memBase, b.unrelated, time.Since(start)); err != nil {
		return err
	}

	var cpu profile
	var cpuErr error
	var profiling sync.WaitGroup
	if b.pprofURL != "" {
		profiling.Go(func() {
			cpu, cpuErr = fetchProfile(ctx, b.pprofURL, "profile", "seconds=30", b.labDir, "cpu-memory-pods.pb.gz", "",
				fmt.Sprintf("CPU, the first 30 s of creating managed pods %d to %d", b.memBase, b.memTotal))
		})
	}
	took, err = addFederations(b.memTotal)
	profiling.Wait()
	if err = errors.Join(err, cpuErr); err != nil {
		return err
	}
	if b.pprofURL != "" {
		b.res.profiles = append(b.res.profiles, cpu)
	}
	if err := b.sampleMemory(ctx, memLabel(b.memTotal, b.unrelated), other+b.memTotal, b.unrelated, took); err != nil {
		return err
	}
	if b.pprofURL != "" {
		hp, err := fetchProfile(ctx, b.pprofURL, "heap", "gc=1", b.labDir, "heap-memory-pods.pb.gz", "inuse_space",
			fmt.Sprintf("heap in use with %d managed and %d unrelated pods", b.memTotal, b.unrelated))
		if err != nil {
			return err
		}
		b.res.profiles = append(b.res.profiles, hp)
	}
	return nil
}

// ms formats d rounded to the millisecond.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
