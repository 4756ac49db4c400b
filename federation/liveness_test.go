package federation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// eventWorld models what wakes a reconcile in the real controller, so that
// a planner that stops short shows as a stall. A reconcile runs only when
// something that has a watch behind it happens: the spec changes, a pod of
// the federation is created, becomes Ready, starts terminating or goes, or
// a RequeueAfter the reconcile asked for comes due. fedop's own status
// writes wake nothing (status-only updates pass no predicate). Every status
// a reconcile would write is checked for contradictions.
type eventWorld struct {
	t   *testing.T
	rng *rand.Rand
	now time.Time
	uid int

	// spec: replicas and revision per component and member.
	components []string
	members    []string
	replicas   map[string]int32 // component/member
	revision   map[string]string

	pods map[string][]rollout.Pod // component/member, what the members hold
	op   *v1alpha1.Operation
	// ordinals is what status records, written with op.
	ordinals []rollout.ComponentOrdinals

	// hooks gives every component a preDelete hook with an undo and a
	// postReady gate of scope Component; each call fails with probability
	// failRate. paused is spec.paused.
	hooks    bool
	failRate float64
	paused   bool
	// release is the time the fedop.io/release-operation annotation names;
	// zero: none.
	release time.Time
	// down holds the members out of sight (not connected, pods unknown)
	// and frozen those whose caches stopped (connected, not fresh; their
	// pods as frozenPods shows them, by component/member), each until the
	// time given; writes to them fail. Both the start and the end of an
	// outage are member state changes, events.
	down, frozen map[string]time.Time
	frozenPods   map[string][]rollout.Pod
	// drained are the pod instances whose preDelete hook answered and that
	// were neither deleted nor undone since: nothing half-done means at
	// most one at a time, and none at rest.
	drained map[types.UID]bool
	// failures counts the step hook's failures in a row (the reconciler's
	// in-memory count).
	failures int
	// calls counts, for the test's own check that its paths ran, the
	// drains and undos that answered and the gate answers that failed.
	calls *hookCounts

	// woken is true when an event or a due requeue calls for a reconcile.
	woken bool
	// requeueAt is when a requested RequeueAfter comes due; zero: none.
	requeueAt time.Time
}

func key(component, member string) string { return component + "/" + member }

func (w *eventWorld) state() rollout.State {
	s := rollout.State{Name: "demo", Operation: w.op, Now: w.now, OrdinalsRecorded: true, Paused: w.paused,
		Release: w.op != nil && w.op.StartedTime.Time.Equal(w.release), ReleaseNames: w.release}
	for _, c := range w.components {
		rc := rollout.Component{Name: c}
		if w.hooks {
			rc.Hooks = rollout.Hooks{
				PreDelete: true, Undo: true, PreDeleteTimeout: 24 * time.Hour,
				PostReady: true, ComponentScope: true, PostReadyTimeout: 24 * time.Hour,
			}
		}
		var recorded map[string][]int
		for _, co := range w.ordinals {
			if co.Component == c {
				rc.NextOrdinal, recorded = co.NextOrdinal, co.Placements
			}
		}
		for _, m := range w.members {
			k := key(c, m)
			pl := rollout.Placement{
				Member: m, Replicas: w.replicas[k], Revision: w.revision[k], Connected: true, Fresh: true,
				Ordinals: slices.Clone(recorded[m]), Pods: slices.Clone(w.pods[k]),
			}
			switch {
			case w.now.Before(w.down[m]):
				pl.Connected, pl.Fresh, pl.Pods = false, false, nil
			case w.now.Before(w.frozen[m]):
				pl.Fresh, pl.Pods = false, slices.Clone(w.frozenPods[k])
			}
			rc.Placements = append(rc.Placements, pl)
		}
		s.Components = append(s.Components, rc)
	}
	return s
}

// reconcile runs one reconcile: plan, check and "write" the status, act.
func (w *eventWorld) reconcile() {
	w.woken = false
	s := w.state()
	plan, retry := w.plan(&s)
	if retry > 0 {
		w.requeueAt = w.now.Add(retry)
	}
	fc, members := fcOf(s)
	st := computeStatus(fc, members, s, plan, "test")
	if !assertConsistent(w.t, st, heldBack(s)) {
		w.t.FailNow()
	}
	w.op, w.ordinals = plan.Operation, plan.Ordinals
	failed := func(member string) bool {
		if w.out(member) {
			// The write fails: the reconcile returns an error and is
			// retried with backoff.
			if w.requeueAt.IsZero() || w.now.Add(time.Second).Before(w.requeueAt) {
				w.requeueAt = w.now.Add(time.Second)
			}
			return true
		}
		return false
	}
	for _, c := range plan.Create {
		k := key(c.Component, c.Member)
		if failed(c.Member) || slices.ContainsFunc(w.pods[k], func(p rollout.Pod) bool { return p.Name == c.Name }) {
			continue // the write failed, or AlreadyExists
		}
		w.uid++
		w.pods[k] = append(w.pods[k], rollout.Pod{Name: c.Name, UID: types.UID(fmt.Sprint(w.uid)), Ordinal: c.Ordinal, Revision: c.Revision})
		w.woken = true // the pod's add event
	}
	if w.hooks && len(w.drained) > 1 {
		w.t.Fatalf("%d pods drained at once, neither deleted nor undone: %v", len(w.drained), w.drained)
	}
	if d := plan.Delete; d != nil && !failed(d.Member) {
		if w.hooks && !w.drained[d.UID] {
			w.t.Fatalf("pod %s (%s) deleted without its preDelete hook having answered", d.Name, d.UID)
		}
		delete(w.drained, d.UID)
		k := key(d.Component, d.Member)
		for i := range w.pods[k] {
			if p := &w.pods[k][i]; p.Name == d.Name && p.UID == d.UID && !p.Terminating {
				p.Terminating = true
				w.woken = true // the update event showing deletionTimestamp
			}
		}
	}
	if plan.RequeueAfter > 0 && (w.requeueAt.IsZero() || w.now.Add(plan.RequeueAfter).Before(w.requeueAt)) {
		w.requeueAt = w.now.Add(plan.RequeueAfter)
	}
}

// out reports whether member answers no request now.
func (w *eventWorld) out(member string) bool {
	return w.now.Before(w.down[member]) || w.now.Before(w.frozen[member])
}

// outage takes a random member out of sight, or freezes its cache, for
// 5 to 40 seconds, unless one is out already.
func (w *eventWorld) outage() {
	if slices.ContainsFunc(w.members, w.out) {
		return
	}
	m, until := w.members[w.rng.IntN(len(w.members))], w.now.Add(time.Duration(5+w.rng.IntN(36))*time.Second)
	if w.rng.IntN(2) == 0 {
		w.down[m] = until
	} else {
		w.frozen[m] = until
		for _, c := range w.components {
			w.frozenPods[key(c, m)] = slices.Clone(w.pods[key(c, m)])
		}
	}
	w.calls.outages++
}

// plan is the reconciler's planWithHooks in this world: the gates the plan
// depends on are asked, the step's hook is called only once the operation
// as last written records its stage, each call failing with probability
// failRate; the planner is called again with the answers. retry is when
// to look again for a call that failed or waits for its stage to be
// written.
func (w *eventWorld) plan(s *rollout.State) (plan rollout.Plan, retry time.Duration) {
	plan = rollout.Next(*s)
	if !w.hooks {
		return plan, 0
	}
	fails := func() bool { return w.rng.Float64() < w.failRate }
	for range 4 {
		called := false
		for _, ref := range plan.Check {
			k := ref.Member + "/" + ref.Name
			if _, ok := s.Calls.Health[k]; ok {
				continue
			}
			if s.Calls.Health == nil {
				s.Calls.Health = map[string]string{}
			}
			s.Calls.Health[k] = ""
			if fails() {
				s.Calls.Health[k] = "HTTP 503"
				retry = 2 * time.Second
				w.calls.gateFailures++
			}
			called = true
		}
		for _, call := range []struct {
			ref   *rollout.PodRef
			stage v1alpha1.StepStage
			done  *bool
		}{{plan.Drain, v1alpha1.StageDraining, &s.Calls.Drained}, {plan.Undo, v1alpha1.StageUndoing, &s.Calls.Undone}} {
			switch {
			case call.ref == nil || *call.done || s.Calls.Failed != "":
			case !recordedStage(w.op, call.stage, call.ref):
				retry = time.Second
			case fails():
				w.failures++
				s.Calls.Failed, s.Calls.Failures = "HTTP 503", w.failures
				retry, called = time.Duration(1+w.rng.IntN(3))*time.Second, true
			default:
				w.failures = 0
				*call.done, called = true, true
				if call.stage == v1alpha1.StageDraining {
					w.drained[call.ref.UID] = true
					w.calls.drains++
				} else {
					delete(w.drained, call.ref.UID)
					w.calls.undos++
				}
			}
		}
		if !called {
			break
		}
		plan = rollout.Next(*s)
	}
	return plan, retry
}

// progress lets kubelets move: each pending pod may become Ready, each
// terminating pod may go. It returns whether anything is still pending.
func (w *eventWorld) progress() bool {
	pending := false
	for k, pods := range w.pods {
		kept := pods[:0]
		for _, p := range pods {
			switch {
			case p.Terminating && w.rng.IntN(2) == 0:
				w.woken = true // delete event
				delete(w.drained, p.UID)
				continue
			case !p.Terminating && !p.Ready && w.rng.IntN(2) == 0:
				p.Ready, p.ReadySince = true, w.now
				w.woken = true
			}
			pending = pending || p.Terminating || !p.Ready
			kept = append(kept, p)
		}
		w.pods[k] = kept
	}
	return pending
}

// run reconciles until nothing is pending and nothing wakes the reconciler.
// It applies changes in order, the first at once and each next one a few
// ticks later, typically while the previous one is still rolling.
func (w *eventWorld) run(changes ...func()) {
	changeAt := 0
	for i := 0; i < 10000; i++ {
		w.now = w.now.Add(time.Second)
		if len(changes) > 0 && i == changeAt {
			changes[0]()
			changes = changes[1:]
			changeAt = i + 1 + w.rng.IntN(8)
			w.woken = true // the spec's update event
		}
		pending := w.progress()
		if !w.requeueAt.IsZero() && !w.now.Before(w.requeueAt) {
			w.requeueAt, w.woken = time.Time{}, true
		}
		for _, outages := range []map[string]time.Time{w.down, w.frozen} {
			for m, until := range outages {
				if !w.now.Before(until) {
					delete(outages, m)
					w.woken = true // the member's state change
				}
			}
		}
		if w.woken {
			w.reconcile()
			continue
		}
		if !pending && w.requeueAt.IsZero() && len(changes) == 0 && len(w.down) == 0 && len(w.frozen) == 0 {
			return // quiescent: nothing will ever wake the reconciler again
		}
	}
	w.t.Fatalf("still busy after 10000 ticks: op %+v", w.op)
}

// requireSpecReached fails unless the members hold exactly what the spec
// asks for, every pod Ready at its placement's revision, and the mutex is
// free.
func (w *eventWorld) requireSpecReached() {
	w.t.Helper()
	require.Nil(w.t, w.op, "the mutex is still held when nothing will wake the reconciler")
	require.Empty(w.t, w.drained, "pods left drained, neither deleted nor undone")
	for _, c := range w.components {
		for _, m := range w.members {
			k := key(c, m)
			require.Len(w.t, w.pods[k], int(w.replicas[k]), "pods of %s: the federation stalled short of its spec", k)
			for _, p := range w.pods[k] {
				require.Equal(w.t, w.revision[k], p.Revision, "%s in %s is outdated: the federation stalled short of its spec", p.Name, m)
				require.True(w.t, p.Ready, "%s in %s is not Ready", p.Name, m)
			}
		}
	}
}

// TestRandomSpecChangesReachTheSpec is a property test of liveness and of
// status consistency: from a settled federation, random spec changes
// (replicas per placement, the image, both at once, each applied while the
// previous one may still be rolling), with the operation in progress
// released by a user now and then (fedop.io/release-operation) and members
// out of sight or frozen for a while, must each be reached with no outside
// event but those, and no status written on the way may claim Complete
// with outdated pods.
func TestRandomSpecChangesReachTheSpec(t *testing.T) {
	randomSpecChanges(t, false)
}

// TestRandomSpecChangesWithHooks is the same property test with every
// component's preDelete hook (with an undo) and postReady gate, each call
// failing at random (30%), and pauses that call steps off mid-way: every
// spec must still be reached, no pod may be deleted before its drain
// answered, at most one pod may be drained at a time, and none may be left
// drained.
func TestRandomSpecChangesWithHooks(t *testing.T) {
	randomSpecChanges(t, true)
}

// hookCounts are what the hooks of a property test did, and how many
// operations it released and member outages it made, over every seed.
type hookCounts struct{ drains, undos, gateFailures, releases, outages int }

func randomSpecChanges(t *testing.T, hooks bool) {
	counts := &hookCounts{}
	defer func() {
		t.Logf("over 400 seeds: %d operations released mid-way, %d member outages", counts.releases, counts.outages)
		assert.Positive(t, counts.releases, "no operation was released")
		assert.Positive(t, counts.outages, "no member was out")
	}()
	if hooks {
		defer func() {
			t.Logf("hooks over 400 seeds: %d drains, %d undos, %d failed gate answers", counts.drains, counts.undos, counts.gateFailures)
			assert.Positive(t, counts.drains, "no drain answered")
			assert.Positive(t, counts.undos, "no step was called off and undone")
			assert.Positive(t, counts.gateFailures, "no gate failed")
		}()
	}
	for seed := uint64(1); seed <= 400; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			w := &eventWorld{
				t: t, rng: rng, now: time.Unix(0, 0),
				components: []string{"alpha", "beta"}[:1+rng.IntN(2)],
				members:    []string{"k8s-a", "k8s-b", "k8s-c"}[:1+rng.IntN(3)],
				replicas:   map[string]int32{}, revision: map[string]string{}, pods: map[string][]rollout.Pod{},
				hooks: hooks, failRate: 0.3, drained: map[types.UID]bool{}, calls: counts,
				down: map[string]time.Time{}, frozen: map[string]time.Time{}, frozenPods: map[string][]rollout.Pod{},
			}
			image := 1
			randomize := func(replicas, images bool) {
				if images {
					image++
				}
				for _, c := range w.components {
					for _, m := range w.members {
						if replicas {
							w.replicas[key(c, m)] = int32(rng.IntN(5))
						}
						w.revision[key(c, m)] = fmt.Sprintf("%s@x:%d", c, image)
					}
				}
			}
			w.run(func() { randomize(true, false) })
			w.requireSpecReached()
			change := func() {
				switch rng.IntN(3) {
				case 0:
					randomize(true, false)
				case 1:
					randomize(false, true)
				default:
					randomize(true, true)
				}
			}
			for range 6 {
				// One change, or a second one applied while the first rolls;
				// with hooks, maybe a pause (and the unpause) meanwhile.
				changes := []func(){change}
				if rng.IntN(2) == 0 {
					changes = append(changes, change)
				}
				if hooks && rng.IntN(2) == 0 {
					changes = append(changes, func() { w.paused = true }, func() { w.paused = false })
				}
				if rng.IntN(2) == 0 {
					// A member goes out of sight or freezes (a state
					// change: an event).
					changes = append(changes, w.outage)
				}
				if rng.IntN(2) == 0 {
					// A user releases the operation then in progress (an
					// annotation change: an event).
					changes = append(changes, func() {
						if w.op != nil {
							w.release = w.op.StartedTime.Time
							w.calls.releases++
						}
					})
				}
				w.run(changes...)
				w.requireSpecReached()
			}
		})
	}
}
