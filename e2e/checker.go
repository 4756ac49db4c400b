package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// Scheme holds the Kubernetes types and fedop's: what the suite's clients
// and the Checker's caches read.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// checkerSyncTimeout bounds the initial list of every watch of a Checker.
const checkerSyncTimeout = 30 * time.Second

// maxHistory bounds the events a Checker keeps per measurement window.
const maxHistory = 10000

// CheckerOptions say what a Checker watches.
type CheckerOptions struct {
	// Host is the host cluster: the checker reads the FederationCluster's
	// spec there (desired counts per placement), never its status.
	Host *rest.Config
	// Members maps each member name the FederationCluster's topology uses
	// to a configuration of the cluster that member name reaches. Two
	// names may reach one cluster: pods are told apart by their
	// fedop.io/member label.
	Members map[string]*rest.Config
	// Namespace and Name are the FederationCluster's.
	Namespace, Name string
}

// Checker is the suite's independent invariant checker for one
// FederationCluster. It has its own watches: the FederationCluster on the
// host (its spec only) and fedop's pods of it in every member (selected by
// the contract's labels: app.kubernetes.io/managed-by=fedop,
// app.kubernetes.io/instance=<name>, fedop.io/member=<member>). It stamps
// every event with its own receive time, and at every event recomputes
//
//	unavailable = sum over placements of max(0, min(desired, highWater) - available)
//
// where available counts the placement's pods Ready and not terminating,
// and highWater is the most pods the placement had available at once since
// its desired count last changed (what it had then, to begin with). A
// replica that was up and is not counts; one a scale-out has yet to bring
// up does not: it was never a replica to lose.
//
// Of those, the replicas that went down by themselves are excused: a pod
// that was Ready and is not, without being deleted (it crashed or
// failed), or one that the test deleted and announced (External), until a
// pod of that name in that member is Ready again. What fedop may be held
// to is
//
//	disrupted = sum over placements of max(0, shortfall - excused)
//
// and the suite requires it never to exceed one, and every deletion by
// fedop to find it at zero (the victim's own unavailability aside). The
// checker also records every moment two live pods share a name across
// members: a pod's identity must be unique in the federation.
//
// It keeps the maxima, the order of deletions (a pod counts as deleted at
// the first event that shows its deletionTimestamp, or at its delete event
// if none did) with the unavailable count just before each, and the pods'
// Ready times, from which Report derives each rollout step's overhead.
//
// It never reads fedop's status: what it reports is what the members show.
// A member that is down delivers no events, so for that time the checker
// holds the member's last known state, as anyone watching it would.
type Checker struct {
	namespace, name string
	cancel          context.CancelFunc
	// watches counts the running host cache; pods is the members' pod
	// watch.
	watches sync.WaitGroup
	pods    *podwatch.Watch

	// mu guards l: handlers of several informers call in concurrently.
	mu sync.Mutex
	l  *ledger
}

// StartChecker starts a Checker and returns once each of its watches has
// listed what exists. Stop it with Stop.
func StartChecker(ctx context.Context, opts CheckerOptions) (*Checker, error) {
	wctx, cancel := context.WithCancel(context.Background())
	c := &Checker{namespace: opts.Namespace, name: opts.Name, cancel: cancel, l: newLedger(time.Now())}
	fail := func(err error) (*Checker, error) {
		c.Stop()
		return nil, err
	}

	host, err := cache.New(opts.Host, cache.Options{
		Scheme:            Scheme,
		DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.FederationCluster{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.Name)},
		},
	})
	if err != nil {
		return fail(fmt.Errorf("checker: host cache: %w", err))
	}
	inf, err := host.GetInformer(wctx, &v1alpha1.FederationCluster{})
	if err == nil {
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onSpec(obj, false) },
			UpdateFunc: func(_, obj any) { c.onSpec(obj, false) },
			DeleteFunc: func(obj any) { c.onSpec(obj, true) },
		})
	}
	if err != nil {
		return fail(fmt.Errorf("checker: host: %w", err))
	}
	c.watches.Go(func() { _ = host.Start(wctx) })

	pods, err := podwatch.StartWatch(ctx, podwatch.Options{
		Members: opts.Members, Namespace: opts.Namespace,
		Selector: func(member string) string {
			return labels.SelectorFromSet(labels.Set{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
				v1alpha1.LabelInstance:  opts.Name,
				v1alpha1.LabelMember:    member,
			}).String()
		},
	}, c.onPod)
	if err != nil {
		return fail(fmt.Errorf("checker: %w", err))
	}
	c.pods = pods

	sctx, cancelSync := context.WithTimeout(ctx, checkerSyncTimeout)
	defer cancelSync()
	if !host.WaitForCacheSync(sctx) {
		return fail(fmt.Errorf("checker: the host's watch did not sync within %s", checkerSyncTimeout))
	}
	return c, nil
}

// Stop stops the checker's watches and waits for them. Report still works.
func (c *Checker) Stop() {
	c.cancel()
	c.watches.Wait()
	if c.pods != nil {
		c.pods.Stop()
	}
}

func (c *Checker) onSpec(obj any, gone bool) {
	at := time.Now()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	fc, ok := obj.(*v1alpha1.FederationCluster)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l.spec(fc.Generation, &fc.Spec, gone || fc.DeletionTimestamp != nil, at)
}

func (c *Checker) onPod(member string, pod *corev1.Pod, gone bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l.pod(member, pod, gone, at)
}

// External announces that the test is about to delete pod name in member
// (the way a user or a node drain would): its deletion is not fedop's, and
// the replica it takes down is excused until it is Ready again.
func (c *Checker) External(member, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l.External(member, name)
}

// Expect tells the checker the spec about to be written (nil: the
// FederationCluster is about to be deleted), so that desired counts change
// before fedop can act on them. Without it, the checker learns a new spec
// from its host watch, which may deliver it after a member watch delivered
// fedop's reaction (a scale-in's deletion, say): a false unavailable pod.
// Events from the host for the generation in place or older are then
// ignored; the next generation (the write this announces) and later ones
// apply.
func (c *Checker) Expect(spec *v1alpha1.FederationClusterSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l.expect(spec, time.Now())
}

// Reset starts a new measurement window: the maximum restarts from the
// current unavailable count, and the deletions, steps and history recorded
// so far are dropped. Pods' states are kept.
func (c *Checker) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l.reset(time.Now())
}

// Report returns what the checker saw since the window started.
func (c *Checker) Report() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.l.report(time.Now())
}

// Deletion is one pod instance seen going.
type Deletion struct {
	Member, Pod string
	UID         types.UID
	// At is when the checker received the first event showing the pod's
	// deletionTimestamp (or its delete event, if no event showed it).
	At time.Time
	// UnavailableBefore is the unavailable count just before it.
	UnavailableBefore int
	// DisruptedBefore is the disrupted count just before it, leaving out
	// the victim's own unavailability (deleting a pod that is down already
	// costs nothing).
	DisruptedBefore int
	// External is true for a deletion the test announced (External): not
	// fedop's, and not a rollout step.
	External bool
	// Unavailable is true when the victim was not Ready at some moment
	// between fedop's previous deletion (or the window's start) and this
	// one: fedop may have chosen it for that, as it replaces unavailable
	// pods before available ones (rollout's nextVictim).
	Unavailable bool
}

// String returns member/pod.
func (d Deletion) String() string { return d.Member + "/" + d.Pod }

// Step is one rollout step after the first of a window: the deletion To
// and the deletion before it, From.
type Step struct {
	From, To Deletion
	// Overhead is the time from the end of the previous step to To's
	// deletion. The previous step ended when its replacement (a new
	// instance with From's member and name) became Ready, or, for a pod
	// not replaced (scale-in), when it was gone. It includes
	// minReadySeconds.
	Overhead time.Duration
	// After says what ended the previous step: "ready" or "gone".
	After string
}

// Event is one change the checker saw.
type Event struct {
	At time.Time
	// Kind is created, ready, unready, deleted (deletionTimestamp seen) or
	// gone (delete event), or spec (desired counts changed).
	Kind        string
	Member, Pod string
	// Unavailable is the unavailable count after the event.
	Unavailable int
}

// eventKindSpec is the Kind of an Event that records a spec change (Expect)
// rather than a pod's.
const eventKindSpec = "spec"

func (e Event) String() string {
	if e.Kind == eventKindSpec {
		return fmt.Sprintf("%s spec (unavailable %d)", e.At.Format("15:04:05.000"), e.Unavailable)
	}
	return fmt.Sprintf("%s %s %s/%s (unavailable %d)", e.At.Format("15:04:05.000"), e.Kind, e.Member, e.Pod, e.Unavailable)
}

// Report is what a Checker saw in one measurement window.
type Report struct {
	// Window is the time since the window started.
	Window time.Duration
	// Unavailable is the count now; MaxUnavailable the window's maximum,
	// first reached at MaxUnavailableAt.
	Unavailable, MaxUnavailable int
	MaxUnavailableAt            time.Time
	// MaxDisrupted is the window's maximum of the disrupted count (see
	// Checker), first reached at MaxDisruptedAt.
	MaxDisrupted   int
	MaxDisruptedAt time.Time
	// Duplicates lists every moment two live pods shared a name across
	// members.
	Duplicates []string
	// Desired is the total desired count now.
	Desired int
	// Deletions in the order seen.
	Deletions []Deletion
	// Steps has one entry per deletion after the first whose previous step
	// had ended before it.
	Steps []Step
	// Overlaps lists deletions seen before the previous step had ended
	// (its replacement not yet Ready, or the pod not yet gone and its
	// placement healed): a rollout that was not one pod at a time.
	Overlaps []string
	// History is every change seen, in order (at most 10000).
	History []Event
}

// DeletionOrder returns fedop's deletions (not the test's own) as
// member/pod, in order.
func (r Report) DeletionOrder() []string {
	out := make([]string, 0, len(r.Deletions))
	for _, d := range r.Deletions {
		if !d.External {
			out = append(out, d.String())
		}
	}
	return out
}

// AvailableOrder returns, as member/pod and in order, fedop's deletions of
// pods that were available when their turn came (Deletion.Unavailable
// false): the deletions whose order the planner's ordering decides alone.
func (r Report) AvailableOrder() []string {
	out := make([]string, 0, len(r.Deletions))
	for _, d := range r.Deletions {
		if !d.External && !d.Unavailable {
			out = append(out, d.String())
		}
	}
	return out
}

// UnavailableDeleted returns, as member/pod, fedop's deletions of pods that
// were not available when deleted (Deletion.Unavailable).
func (r Report) UnavailableDeleted() []string {
	var out []string
	for _, d := range r.Deletions {
		if !d.External && d.Unavailable {
			out = append(out, d.String())
		}
	}
	return out
}

// Overheads returns the steps' overheads, in order.
func (r Report) Overheads() []time.Duration {
	out := make([]time.Duration, 0, len(r.Steps))
	for _, s := range r.Steps {
		out = append(out, s.Overhead)
	}
	return out
}

// Percentile returns the p-th percentile (0 < p <= 100, nearest rank) of
// ds, or 0 when ds is empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Summary is a one-line account of r: maximum disrupted and unavailable,
// deletions, steps and the steps' overhead percentiles.
func (r Report) Summary() string {
	o := r.Overheads()
	if len(o) == 0 {
		return fmt.Sprintf("max disrupted %d, max unavailable %d, %d deletions, no step", r.MaxDisrupted, r.MaxUnavailable, len(r.Deletions))
	}
	return fmt.Sprintf("max disrupted %d, max unavailable %d, %d deletions, %d steps, overhead p50 %s p90 %s p99 %s max %s",
		r.MaxDisrupted, r.MaxUnavailable, len(r.Deletions), len(r.Steps),
		fmtDuration(Percentile(o, 50)), fmtDuration(Percentile(o, 90)), fmtDuration(Percentile(o, 99)), fmtDuration(slices.Max(o)))
}

func fmtDuration(d time.Duration) string { return d.Round(time.Millisecond).String() }

// ledger is the Checker's bookkeeping, fed events with their receive
// times. It does no I/O, so it is tested with made-up events.
type ledger struct {
	// desired is replicas by member/component.
	desired map[string]int
	// highWater is, by member/component, the most pods available at once
	// since the placement's desired count last changed.
	highWater map[string]int
	// external holds member/name of the deletions the test announced;
	// excused member/name of the replicas that went down by themselves.
	external, excused map[string]bool
	// deleting is set once the FederationCluster is being deleted: its
	// pods are no longer desired.
	deleting bool
	// appliedGen is the spec generation desired comes from; seenGen the
	// highest generation any host event showed.
	appliedGen, seenGen int64

	// pods holds every pod instance seen, gone ones included: steps are
	// matched against them.
	pods *podwatch.Set

	unavailable, disrupted podwatch.Gauge
	windowStart            time.Time
	duplicates             []string
	deletions              []Deletion
	steps                  []Step
	overlaps               []string
	history                []Event
}

func newLedger(now time.Time) *ledger {
	return &ledger{
		desired: map[string]int{}, highWater: map[string]int{}, external: map[string]bool{}, excused: map[string]bool{},
		pods: podwatch.NewSet(), windowStart: now,
		unavailable: podwatch.Gauge{MaxAt: now}, disrupted: podwatch.Gauge{MaxAt: now},
	}
}

func desiredOf(spec *v1alpha1.FederationClusterSpec) map[string]int {
	out := map[string]int{}
	for _, c := range spec.Components {
		for _, p := range c.Topology {
			out[p.Member+"/"+c.Name] += int(p.Replicas)
		}
	}
	return out
}

// placement returns the member/component key of r.
func placement(r *podwatch.Record) string { return r.Member + "/" + r.Labels[v1alpha1.LabelComponent] }

// spec records a host event of the FederationCluster: generation gen with
// spec, deleting when it is being deleted or gone.
func (l *ledger) spec(gen int64, spec *v1alpha1.FederationClusterSpec, deleting bool, at time.Time) {
	l.seenGen = max(l.seenGen, gen)
	switch {
	case deleting && !l.deleting:
		l.deleting = true
		l.setDesired(map[string]int{})
	case !l.deleting && gen > l.appliedGen:
		l.setDesired(desiredOf(spec))
		l.appliedGen = gen
	default:
		return
	}
	l.change(at, eventKindSpec, nil)
}

// External notes the test's own deletion of name in member (see
// Checker.External).
func (l *ledger) External(member, name string) {
	l.external[member+"/"+name] = true
}

// expect applies spec (nil: deletion) as the next generation's.
func (l *ledger) expect(spec *v1alpha1.FederationClusterSpec, at time.Time) {
	if spec == nil {
		l.deleting = true
		l.setDesired(map[string]int{})
	} else {
		l.setDesired(desiredOf(spec))
		l.appliedGen = l.seenGen + 1
	}
	l.change(at, eventKindSpec, nil)
}

// pod records an event of pod in member; gone for its delete event.
func (l *ledger) pod(member string, pod *corev1.Pod, gone bool, at time.Time) {
	before, disruptedBefore := l.unavailable.Now, l.disrupted.Now
	wasReady := false
	if r := l.pods.Get(pod.UID); r != nil {
		wasReady = r.Ready
	}
	rec, ch := l.pods.Observe(member, pod, gone, at)
	key := member + "/" + pod.Name
	if ch&podwatch.Created != 0 {
		l.checkDuplicate(rec, at)
		l.change(at, "created", rec)
	}
	switch {
	case ch&podwatch.BecameReady != 0:
		delete(l.excused, key) // up again
		l.change(at, "ready", rec)
	case ch&podwatch.BecameUnready != 0:
		if pod.DeletionTimestamp == nil {
			l.excused[key] = true // down by itself
		}
		l.change(at, "unready", rec)
	}
	if ch&podwatch.Deleted != 0 {
		d := Deletion{Member: member, Pod: pod.Name, UID: pod.UID, At: at, UnavailableBefore: before, External: l.external[key]}
		d.DisruptedBefore = disruptedBefore
		ready := rec.Ready || (gone && wasReady)
		since := l.windowStart
		if last, ok := l.lastDeletion(); ok {
			since = last.At
		}
		d.Unavailable = !ready || rec.UnreadyAt.After(since)
		if !ready && !l.excused[key] && d.DisruptedBefore > 0 {
			d.DisruptedBefore-- // the victim was down already
		}
		if d.External {
			delete(l.external, key)
			if ready {
				l.excused[key] = true
			}
		} else {
			l.step(d, rec)
		}
		l.deletions = append(l.deletions, d)
		l.change(at, "deleted", rec)
	}
	if ch&podwatch.Gone != 0 {
		l.change(at, "gone", rec)
	}
}

// change re-evaluates and records an event of kind about rec (nil for a
// spec change).
func (l *ledger) change(at time.Time, kind string, rec *podwatch.Record) {
	l.evaluate(at)
	if len(l.history) == maxHistory {
		return
	}
	e := Event{At: at, Kind: kind, Unavailable: l.unavailable.Now}
	if rec != nil {
		e.Member, e.Pod = rec.Member, rec.Name
	}
	l.history = append(l.history, e)
}

// setDesired replaces the desired counts; a placement whose count changes
// starts its high-water mark again from what it has available now.
func (l *ledger) setDesired(desired map[string]int) {
	available := l.pods.Available(placement)
	for key, want := range desired {
		if old, ok := l.desired[key]; !ok || old != want {
			l.highWater[key] = available[key]
		}
	}
	l.desired = desired
}

// evaluate recomputes the unavailable and disrupted counts and their
// maxima.
func (l *ledger) evaluate(at time.Time) {
	available := l.pods.Available(placement)
	excused, recs := map[string]int{}, l.pods.Records()
	for key := range l.excused {
		member, name, _ := strings.Cut(key, "/")
		for _, r := range recs {
			if r.Member == member && r.Name == name {
				excused[placement(&r)]++
				break
			}
		}
	}
	u, d := 0, 0
	for key, want := range l.desired {
		l.highWater[key] = max(l.highWater[key], available[key])
		short := podwatch.Shortfall(map[string]int{key: min(want, l.highWater[key])}, available)
		u += short
		d += max(0, short-excused[key])
	}
	l.unavailable.Set(u, at)
	l.disrupted.Set(d, at)
}

// checkDuplicate records rec, just seen, if another live pod has its name
// in another member.
func (l *ledger) checkDuplicate(rec *podwatch.Record, at time.Time) {
	for _, r := range l.pods.Records() {
		if r.UID != rec.UID && r.Name == rec.Name && r.Member != rec.Member && r.GoneAt.IsZero() {
			l.duplicates = append(l.duplicates, fmt.Sprintf("%s: pod %s lives in %s and %s", at.Format("15:04:05.000"), rec.Name, r.Member, rec.Member))
		}
	}
}

func (l *ledger) reset(at time.Time) {
	l.unavailable.Reset(at)
	l.disrupted.Reset(at)
	l.windowStart = at
	l.deletions, l.steps, l.overlaps, l.history, l.duplicates = nil, nil, nil, nil, nil
}

func (l *ledger) report(now time.Time) Report {
	r := Report{
		Window:           now.Sub(l.windowStart),
		Unavailable:      l.unavailable.Now,
		MaxUnavailable:   l.unavailable.Max,
		MaxUnavailableAt: l.unavailable.MaxAt,
		MaxDisrupted:     l.disrupted.Max,
		MaxDisruptedAt:   l.disrupted.MaxAt,
		Duplicates:       slices.Clone(l.duplicates),
		Deletions:        slices.Clone(l.deletions),
		Steps:            slices.Clone(l.steps),
		Overlaps:         slices.Clone(l.overlaps),
		History:          slices.Clone(l.history),
	}
	for _, n := range l.desired {
		r.Desired += n
	}
	return r
}

// step records, when deletion to of rec is seen, how it follows the
// window's previous deletion by fedop: a step, with its overhead, if the
// previous step had ended (podwatch.StepOf, decided with what is known at
// that moment), else an overlap. A step that ended with its pod gone and
// no replacement counts only if its placement is not short of available
// pods (a scale-in's surplus pod, or a pod no longer desired).
func (l *ledger) step(to Deletion, rec *podwatch.Record) {
	from, ok := l.lastDeletion()
	if !ok {
		return
	}
	s := podwatch.StepOf(l.pods.Records(), *l.pods.Get(from.UID), *rec)
	if s.After == podwatch.AfterReady || (s.After == podwatch.AfterGone && !l.short(&s.Prev)) {
		l.steps = append(l.steps, Step{From: from, To: to, Overhead: s.Overhead, After: s.After})
		return
	}
	l.overlaps = append(l.overlaps, fmt.Sprintf("%s deleted at %s, before the step of %s ended", to, to.At.Format("15:04:05.000"), from))
}

// lastDeletion returns fedop's last deletion in the window, if any.
func (l *ledger) lastDeletion() (Deletion, bool) {
	for i := len(l.deletions) - 1; i >= 0; i-- {
		if !l.deletions[i].External {
			return l.deletions[i], true
		}
	}
	return Deletion{}, false
}

// short reports whether r's placement has fewer available pods than
// desired.
func (l *ledger) short(r *podwatch.Record) bool {
	return l.pods.Available(placement)[placement(r)] < l.desired[placement(r)]
}

// FormatHistory returns the events of h, one per line, for a test log.
func FormatHistory(h []Event) string {
	var b strings.Builder
	for _, e := range h {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}
