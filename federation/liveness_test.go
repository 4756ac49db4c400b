package federation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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

	// woken is true when an event or a due requeue calls for a reconcile.
	woken bool
	// requeueAt is when a requested RequeueAfter comes due; zero: none.
	requeueAt time.Time
}

func key(component, member string) string { return component + "/" + member }

func (w *eventWorld) state() rollout.State {
	s := rollout.State{Name: "demo", Operation: w.op, Now: w.now, OrdinalsRecorded: true}
	for _, c := range w.components {
		rc := rollout.Component{Name: c}
		var recorded map[string][]int
		for _, co := range w.ordinals {
			if co.Component == c {
				rc.NextOrdinal, recorded = co.NextOrdinal, co.Placements
			}
		}
		for _, m := range w.members {
			k := key(c, m)
			rc.Placements = append(rc.Placements, rollout.Placement{
				Member: m, Replicas: w.replicas[k], Revision: w.revision[k], Connected: true, Fresh: true,
				Ordinals: slices.Clone(recorded[m]), Pods: slices.Clone(w.pods[k]),
			})
		}
		s.Components = append(s.Components, rc)
	}
	return s
}

// reconcile runs one reconcile: plan, check and "write" the status, act.
func (w *eventWorld) reconcile() {
	w.woken = false
	s := w.state()
	plan := rollout.Next(s)
	fc, members := fcOf(s)
	st := computeStatus(fc, members, s, plan, "test")
	if !assertConsistent(w.t, st, heldBack(s)) {
		w.t.FailNow()
	}
	w.op, w.ordinals = plan.Operation, plan.Ordinals
	for _, c := range plan.Create {
		k := key(c.Component, c.Member)
		if slices.ContainsFunc(w.pods[k], func(p rollout.Pod) bool { return p.Name == c.Name }) {
			continue // AlreadyExists
		}
		w.uid++
		w.pods[k] = append(w.pods[k], rollout.Pod{Name: c.Name, UID: types.UID(fmt.Sprint(w.uid)), Ordinal: c.Ordinal, Revision: c.Revision})
		w.woken = true // the pod's add event
	}
	if d := plan.Delete; d != nil {
		k := key(d.Component, d.Member)
		for i := range w.pods[k] {
			if p := &w.pods[k][i]; p.Name == d.Name && p.UID == d.UID && !p.Terminating {
				p.Terminating = true
				w.woken = true // the update event showing deletionTimestamp
			}
		}
	}
	if plan.RequeueAfter > 0 {
		w.requeueAt = w.now.Add(plan.RequeueAfter)
	}
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
		if w.woken {
			w.reconcile()
			continue
		}
		if !pending && w.requeueAt.IsZero() && len(changes) == 0 {
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
// previous one may still be rolling) must each be reached with no outside
// event, and no status written on the way may claim Complete with outdated
// pods.
func TestRandomSpecChangesReachTheSpec(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			w := &eventWorld{
				t: t, rng: rng, now: time.Unix(0, 0),
				components: []string{"alpha", "beta"}[:1+rng.IntN(2)],
				members:    []string{"k8s-a", "k8s-b", "k8s-c"}[:1+rng.IntN(3)],
				replicas:   map[string]int32{}, revision: map[string]string{}, pods: map[string][]rollout.Pod{},
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
				// One change, or a second one applied while the first rolls.
				changes := []func(){change}
				if rng.IntN(2) == 0 {
					changes = append(changes, change)
				}
				w.run(changes...)
				w.requireSpecReached()
			}
		})
	}
}
