package rollout

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// world is a model of the member clusters: pods that are created not Ready,
// become Ready later, and once deleted terminate for a while before they go.
// A controller that runs the planner on it may crash between any two writes,
// and sees the pods through a cache that lags behind (never going back in
// time, as an informer's does).
type world struct {
	rng        *rand.Rand
	tick       int
	history    [][]Component // history[i] is the pods as they were at tick i
	components []Component   // now; Pods mutated in place
	op         *v1alpha1.Operation
	// ordinals is what status records of the ordinals, written with op.
	ordinals   []ComponentOrdinals
	cacheTick  int
	uid        int
	deletions  []string // member/pod, in order
	maxUnavail int
	baseline   map[string]int
	// tickLen is how much time a tick takes; zero: a second.
	tickLen time.Duration
	// release is the time the release annotation names (zero: none), and
	// released counts, by that time, the operations it released.
	release  time.Time
	released map[time.Time]int
	// expect models the reconciler's expectations (federation's
	// expectations.go): a deletion this process issued stands in for the
	// cache until the cache shows it, and a crash (a restart) loses them
	// but starts from a fresh cache, as new informers list. deleted holds
	// them, by member/pod, the instance deleted.
	expect  bool
	deleted map[string]types.UID
	// down holds the members out of sight (their API servers do not
	// answer: not connected, pods unknown), and frozen those whose caches
	// stopped at a tick (connected, but not fresh): each until the tick
	// given. Their pods go on living; writes to them fail.
	down, frozen map[string]int
	frozenAt     map[string]int
	// paused is spec.paused.
	paused bool
}

// out reports whether member answers no request now.
func (w *world) out(member string) bool {
	return w.down[member] > w.tick || w.frozen[member] > w.tick
}

// now is the time at the current tick.
func (w *world) now() time.Time {
	return time.Unix(0, 0).Add(time.Duration(w.tick) * cmp.Or(w.tickLen, time.Second))
}

func newWorld(seed uint64, spec []Component) *world {
	w := &world{
		rng: rand.New(rand.NewPCG(seed, seed)), components: spec,
		released: map[time.Time]int{}, deleted: map[string]types.UID{},
		down: map[string]int{}, frozen: map[string]int{}, frozenAt: map[string]int{},
	}
	w.snapshot()
	return w
}

func (w *world) snapshot() {
	cp := make([]Component, len(w.components))
	for i, c := range w.components {
		cp[i] = Component{Name: c.Name}
		for _, pl := range c.Placements {
			pl.Pods = slices.Clone(pl.Pods)
			cp[i].Placements = append(cp[i].Placements, pl)
		}
	}
	w.history = append(w.history, cp)
}

// observe returns the cache's view: the pods at some recent tick, with the
// desired state (replicas, revisions, connectivity) of now and the ordinals
// status records.
func (w *world) observe() []Component {
	w.cacheTick = max(w.cacheTick, w.tick-w.rng.IntN(3))
	seen := w.history[w.cacheTick]
	out := make([]Component, len(w.components))
	for i, c := range w.components {
		out[i] = Component{Name: c.Name}
		for _, co := range w.ordinals {
			if co.Component == c.Name {
				out[i].NextOrdinal = co.NextOrdinal
			}
		}
		for j, pl := range c.Placements {
			pl.Pods = slices.Clone(seen[i].Placements[j].Pods)
			if w.frozen[pl.Member] > w.tick {
				pl.Pods = slices.Clone(w.history[w.frozenAt[pl.Member]][i].Placements[j].Pods)
			}
			for k := range pl.Pods {
				key := pl.Member + "/" + pl.Pods[k].Name
				if uid, ok := w.deleted[key]; ok && uid == pl.Pods[k].UID && !pl.Pods[k].Terminating {
					pl.Pods[k].Terminating = true
				}
			}
			pl.Fresh = pl.Connected
			switch {
			case w.down[pl.Member] > w.tick:
				pl.Connected, pl.Fresh, pl.Pods = false, false, nil
			case w.frozen[pl.Member] > w.tick:
				pl.Fresh = false
			}
			for _, co := range w.ordinals {
				if co.Component == c.Name {
					pl.Ordinals = slices.Clone(co.Placements[pl.Member])
				}
			}
			out[i].Placements = append(out[i].Placements, pl)
		}
	}
	return out
}

// state is what a reconcile reads now.
func (w *world) state() State {
	return State{Name: "demo", Components: w.observe(), Operation: w.op, Now: w.now(), OrdinalsRecorded: true, Paused: w.paused,
		Release: w.op != nil && w.op.StartedTime.Time.Equal(w.release), ReleaseNames: w.release}
}

func (w *world) placement(member, component string) *Placement {
	for i := range w.components {
		if w.components[i].Name != component {
			continue
		}
		for j := range w.components[i].Placements {
			if w.components[i].Placements[j].Member == member {
				return &w.components[i].Placements[j]
			}
		}
	}
	return nil
}

// reconcile runs one reconcile: plan, write the operation (acknowledge),
// act. It may crash before the write or between the write and the action.
func (w *world) reconcile(t *testing.T) {
	plan := Next(w.state())
	if d := plan.Delete; d != nil {
		require.False(t, w.paused, "tick %d: pod %s in %s deleted while paused", w.tick, d.Name, d.Member)
		// A step's deletion waits for every member in use to be seen.
		for _, c := range w.components {
			for _, pl := range c.Placements {
				require.False(t, w.out(pl.Member) && (pl.Replicas > 0 || len(pl.Pods) > 0),
					"tick %d: pod %s in %s deleted while member %s, in use, is out of sight or frozen", w.tick, d.Name, d.Member, pl.Member)
			}
		}
	}
	if w.rng.IntN(10) == 0 {
		w.crashed()
		return // crashed before acknowledging
	}
	w.op, w.ordinals = plan.Operation, plan.Ordinals
	if plan.Released {
		w.released[w.release]++
	}
	if w.rng.IntN(10) == 0 {
		w.crashed()
		return // crashed after acknowledging, before acting
	}
	for _, c := range plan.Create {
		pl := w.placement(c.Member, c.Component)
		require.NotNil(t, pl)
		if w.out(c.Member) {
			continue // the write fails
		}
		if findPod(pl, c.Name) != nil {
			continue // AlreadyExists: server-side apply changes nothing
		}
		w.uid++
		pl.Pods = append(pl.Pods, Pod{Name: c.Name, UID: types.UID(fmt.Sprint(w.uid)), Ordinal: c.Ordinal, Revision: c.Revision})
	}
	if d := plan.Delete; d != nil {
		pl := w.placement(d.Member, d.Component)
		require.NotNil(t, pl)
		if pod := findPod(pl, d.Name); pod != nil && pod.UID == d.UID && !pod.Terminating && !w.out(d.Member) {
			pod.Terminating = true
			w.deletions = append(w.deletions, d.Member+"/"+d.Name)
			if w.expect {
				w.deleted[d.Member+"/"+d.Name] = d.UID
			}
		}
	}
}

// threeRounds are the spec changes the fault-injecting simulations roll,
// one per round: an upgrade, a scale, and both at once.
func threeRounds(rng *rand.Rand) []func(pl *Placement) {
	return []func(pl *Placement){
		func(pl *Placement) { pl.Revision = "r2" },
		func(pl *Placement) { pl.Replicas = int32(rng.IntN(5)) },
		func(pl *Placement) { pl.Revision, pl.Replicas = "r3", int32(rng.IntN(5)) },
	}
}

// change applies change to every placement.
func (w *world) change(change func(pl *Placement)) {
	for i := range w.components {
		for j := range w.components[i].Placements {
			change(&w.components[i].Placements[j])
		}
	}
}

// outage takes one of members out of sight, or freezes its cache, for 5
// to 40 ticks, unless one is out already.
func (w *world) outage(members []string) {
	if slices.ContainsFunc(members, w.out) {
		return
	}
	m, until := members[w.rng.IntN(len(members))], w.tick+5+w.rng.IntN(36)
	if w.rng.IntN(2) == 0 {
		w.down[m] = until
	} else {
		w.frozen[m], w.frozenAt[m] = until, w.tick
	}
}

// crashed is the controller's restart, when the world models
// expectations: they are lost, and the caches start from a fresh list.
func (w *world) crashed() {
	if w.expect {
		clear(w.deleted)
		w.cacheTick = w.tick
	}
}

// progress lets kubelets and the garbage collector move on.
func (w *world) progress() {
	for i := range w.components {
		for j := range w.components[i].Placements {
			pl := &w.components[i].Placements[j]
			pl.Pods = slices.DeleteFunc(pl.Pods, func(p Pod) bool { return p.Terminating && w.rng.IntN(3) == 0 })
			for k := range pl.Pods {
				if !pl.Pods[k].Ready && !pl.Pods[k].Terminating && w.rng.IntN(3) == 0 {
					pl.Pods[k].Ready, pl.Pods[k].ReadySince = true, w.now()
				}
			}
		}
	}
}

// unavailable counts, as an independent checker would, the desired pods
// that are not available: per placement, desired minus Ready and not
// terminating, never below zero. Pods a scale-out has yet to create are not
// counted: the desired count of a placement is capped by what it had
// available when the change began (w.baseline).
func (w *world) unavailable() int {
	n := 0
	for _, c := range w.components {
		for _, pl := range c.Placements {
			desired := min(int(pl.Replicas), w.baseline[pl.Member+"/"+c.Name])
			n += max(0, desired-available(pl))
		}
	}
	return n
}

func available(pl Placement) int {
	ok := 0
	for _, p := range pl.Pods {
		if p.Ready && !p.Terminating {
			ok++
		}
	}
	return ok
}

// begin records what is available now, before a change of the spec.
func (w *world) begin() {
	w.maxUnavail = 0
	w.baseline = map[string]int{}
	for _, c := range w.components {
		for _, pl := range c.Placements {
			w.baseline[pl.Member+"/"+c.Name] = available(pl)
		}
	}
}

func (w *world) step(t *testing.T) {
	w.reconcile(t)
	w.progress()
	w.tick++
	w.snapshot()
	w.maxUnavail = max(w.maxUnavail, w.unavailable())
}

func (w *world) settled() bool {
	if w.op != nil {
		return false
	}
	for _, c := range w.components {
		for _, pl := range c.Placements {
			if len(pl.Pods) != int(pl.Replicas) {
				return false
			}
			for _, p := range pl.Pods {
				if !p.Ready || p.Terminating || p.Revision != pl.Revision {
					return false
				}
			}
		}
	}
	return true
}

func (w *world) run(t *testing.T, limit int) {
	for i := 0; i < limit; i++ {
		if w.settled() {
			// One more reconcile must agree that nothing is left to do.
			plan := Next(w.state())
			if plan.Operation == nil && len(plan.Create) == 0 && plan.Delete == nil {
				return
			}
		}
		w.step(t)
	}
	plan := Next(w.state())
	t.Fatalf("not settled after %d ticks: op %+v; plan %+v; world %+v", limit, w.op, plan, w.components)
}

// randomSpec makes 1-3 components over 1-3 members with 0-4 replicas each.
func randomSpec(rng *rand.Rand) []Component {
	members := []string{"k8s-a", "k8s-b", "k8s-c"}[:1+rng.IntN(3)]
	var out []Component
	for ci := range 1 + rng.IntN(3) {
		c := Component{Name: fmt.Sprintf("c%d", ci)}
		for _, m := range members {
			c.Placements = append(c.Placements, Placement{Member: m, Replicas: int32(rng.IntN(5)), Revision: "r1", Connected: true})
		}
		out = append(out, c)
	}
	return out
}

// simulate runs test on seeds random topologies, seeds 1 to seeds, one
// subtest each: rng is the seed's stream of draws (stream sets the tests
// apart, so that each draws its own topologies), w a world of that
// topology, set up by configure when it is not nil and then initialized.
func simulate(t *testing.T, seeds, stream uint64, configure func(w *world), test func(t *testing.T, rng *rand.Rand, w *world)) {
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, stream))
		spec := randomSpec(rng)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newWorld(seed, spec)
			if configure != nil {
				configure(w)
			}
			w.run(t, 2000)
			test(t, rng, w)
		})
	}
}

// inTenths sets w up for releases: ticks of 100 ms, so that releases often
// fall in the second their operation started, and the reconciler's
// expectations, on which safety after a mid-step release rests.
func inTenths(w *world) {
	w.tickLen, w.expect = 100*time.Millisecond, true
}

// members returns the members of w's placements (every component has a
// placement in each).
func (w *world) members() []string {
	var out []string
	for _, pl := range w.components[0].Placements {
		out = append(out, pl.Member)
	}
	return out
}

// assertReleasedOnce checks that every release annotation released one
// operation at most.
func (w *world) assertReleasedOnce(t *testing.T) {
	t.Helper()
	for at, n := range w.released {
		assert.LessOrEqual(t, n, 1, "operations released by the annotation naming %s", at.UTC().Format(time.RFC3339))
	}
}

// TestSimulatedRollouts drives the planner through initialize, upgrade and
// scale on random topologies with crashes and lagging caches, and checks
// the contract: once initialized, never more than one desired pod
// unavailable; upgrades in component order, members alternating, highest
// ordinal first; every pod keeps its name and member.
func TestSimulatedRollouts(t *testing.T) {
	simulate(t, 300, 0, nil, func(t *testing.T, rng *rand.Rand, w *world) {
		w.begin()

		// Upgrade every placement.
		before := map[string]string{}
		for i := range w.components {
			for j := range w.components[i].Placements {
				pl := &w.components[i].Placements[j]
				pl.Revision = "r2"
				for _, p := range pl.Pods {
					before[p.Name] = pl.Member
				}
			}
		}
		w.deletions = nil
		w.run(t, 5000)
		assert.LessOrEqual(t, w.maxUnavail, 1, "more than one desired pod unavailable during the upgrade")
		after := map[string]string{}
		for _, c := range w.components {
			for _, pl := range c.Placements {
				for _, p := range pl.Pods {
					after[p.Name] = pl.Member
				}
			}
		}
		assert.Equal(t, before, after, "every pod keeps its name and member")
		assert.Equal(t, expectedUpgradeOrder(w.components), w.deletions, "upgrade order")

		// Scale every placement to a new random size.
		w.begin()
		for i := range w.components {
			for j := range w.components[i].Placements {
				w.components[i].Placements[j].Replicas = int32(rng.IntN(5))
			}
		}
		w.run(t, 5000)
		assert.LessOrEqual(t, w.maxUnavail, 1, "more than one desired pod unavailable during scaling")
	})
}

// TestSimulatedReleases: a user releases the operation in progress
// (fedop.io/release-operation naming its startedTime) at random moments
// of upgrades and scales, mid-step included, with ticks of 100 ms so that
// releases often fall in the second their operation started. The world
// models the reconciler's expectations: a released step's deletion is
// known to the process that issued it until its cache shows it. Never more
// than one desired pod is unavailable, the federation still reaches its
// spec, and each annotation releases one operation: the one it names, not
// the next ones started within the same second (an operation is named by
// the second it started).
func TestSimulatedReleases(t *testing.T) {
	simulate(t, 200, 1, inTenths, func(t *testing.T, rng *rand.Rand, w *world) {
		for round, change := range threeRounds(rng) {
			w.begin()
			w.change(change)
			for i := 0; !w.settled(); i++ {
				require.Less(t, i, 5000, "round %d not settled: op %+v; world %+v", round, w.op, w.components)
				if w.op != nil && rng.IntN(8) == 0 {
					w.release = w.op.StartedTime.Time
				}
				w.step(t)
			}
			w.run(t, 5000)
			assert.LessOrEqual(t, w.maxUnavail, 1, "round %d: more than one desired pod unavailable", round)
		}
		w.assertReleasedOnce(t)
	})
}

// TestSimulatedOutages: members go out of sight (their API servers stop
// answering) or freeze (their caches stop, still connected) at random
// moments of upgrades and scales, one at a time, for 5 to 40 ticks, while
// their pods go on living; with crashes and lagging caches as above.
// Never more than one desired pod is unavailable, counted over every
// member, seen or not; a pod name is never held in two members; every
// round settles once the members are back.
func TestSimulatedOutages(t *testing.T) {
	// busy counts the ticks at which a member was out while an operation
	// held the mutex, over every seed: the outages must fall mid-operation.
	busy := 0
	defer func() {
		t.Logf("%d ticks with a member out during an operation", busy)
		assert.Positive(t, busy, "no outage fell during an operation")
	}()
	simulate(t, 200, 2, func(w *world) { w.expect = true }, func(t *testing.T, rng *rand.Rand, w *world) {
		members := w.members()
		for round, change := range threeRounds(rng) {
			w.begin()
			w.change(change)
			for i := 0; !w.settled() || slices.ContainsFunc(members, w.out); i++ {
				require.Less(t, i, 5000, "round %d not settled: op %+v; world %+v", round, w.op, w.components)
				if rng.IntN(10) == 0 {
					w.outage(members)
				}
				if w.op != nil && slices.ContainsFunc(members, w.out) {
					busy++
				}
				w.step(t)
				w.requireNamesUnique(t)
			}
			w.run(t, 5000)
			assert.LessOrEqual(t, w.maxUnavail, 1, "round %d: more than one desired pod unavailable", round)
		}
	})
}

// TestSimulatedChaos combines what the tests above inject one at a time,
// as users and clusters do: spec changes (replicas, revision or both)
// applied while the last one still rolls, pauses, releases of the
// operation in progress, members out of sight or frozen, crashes and
// lagging caches, all at random moments of six rounds on 200 random
// topologies (up to two more changes while a round's first rolls). Checked as above (no step's deletion while paused or while a
// member in use is out, no pod name in two members, each annotation
// releasing one operation), and per round: never more than one desired pod
// unavailable, where a placement's desired pods are capped by what it had
// available when the round began and by every replica count it was given
// since; and the round's last spec reached.
func TestSimulatedChaos(t *testing.T) {
	// What was injected while an operation held the mutex, over every seed.
	var midChanges, pausedTicks, releases, outageTicks int
	defer func() {
		t.Logf("during operations: %d spec changes, %d ticks paused, %d releases, %d ticks with a member out",
			midChanges, pausedTicks, releases, outageTicks)
		for what, n := range map[string]int{"spec change": midChanges, "pause": pausedTicks, "release": releases, "outage": outageTicks} {
			assert.Positive(t, n, "no %s fell during an operation", what)
		}
	}()
	simulate(t, 200, 3, inTenths, func(t *testing.T, rng *rand.Rand, w *world) {
		members := w.members()
		revision := 1
		change := func() {
			scale, upgrade := rng.IntN(3) != 1, rng.IntN(3) != 0
			if upgrade {
				revision++
			}
			for i := range w.components {
				for j := range w.components[i].Placements {
					pl := &w.components[i].Placements[j]
					if scale {
						pl.Replicas = int32(rng.IntN(5))
					}
					pl.Revision = fmt.Sprintf("r%d", revision)
					k := pl.Member + "/" + w.components[i].Name
					w.baseline[k] = min(w.baseline[k], int(pl.Replicas))
				}
			}
		}
		for round := range 6 {
			w.begin()
			change()
			more := rng.IntN(3) // changes applied while this one rolls
			for i := 0; !w.settled() || w.paused || slices.ContainsFunc(members, w.out); i++ {
				require.Less(t, i, 20000, "round %d not settled: op %+v; world %+v", round, w.op, w.components)
				switch n := rng.IntN(100); {
				case n < 3 && more > 0:
					more--
					change()
					midChanges += btoi(w.op != nil)
				case n < 6:
					w.paused = !w.paused
				case n < 14 && w.op != nil:
					w.release = w.op.StartedTime.Time
					releases++
				case n < 24:
					w.outage(members)
				}
				if w.op != nil {
					pausedTicks += btoi(w.paused)
					outageTicks += btoi(slices.ContainsFunc(members, w.out))
				}
				w.step(t)
				w.requireNamesUnique(t)
			}
			w.run(t, 5000)
			assert.LessOrEqual(t, w.maxUnavail, 1, "round %d: more than one desired pod unavailable", round)
		}
		w.assertReleasedOnce(t)
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requireNamesUnique fails t when a pod name is held in two members.
func (w *world) requireNamesUnique(t *testing.T) {
	names := map[string]string{}
	for _, c := range w.components {
		for _, pl := range c.Placements {
			for _, p := range pl.Pods {
				if other, ok := names[p.Name]; ok && other != pl.Member {
					require.Failf(t, "a pod name in two members", "%s in %s and %s at tick %d", p.Name, other, pl.Member, w.tick)
				}
				names[p.Name] = pl.Member
			}
		}
	}
}

// expectedUpgradeOrder is the contract's order for a federation initialized
// from spec (ordinals handed out in topology order): components in order;
// members alternate in topology order; highest ordinal first in a member.
func expectedUpgradeOrder(spec []Component) []string {
	var out []string
	for _, c := range spec {
		queues := make([][]string, len(c.Placements))
		next := 0
		for j, pl := range c.Placements {
			for k := 0; k < int(pl.Replicas); k++ {
				queues[j] = append([]string{pl.Member + "/" + PodName("demo", c.Name, next)}, queues[j]...)
				next++
			}
		}
		for left := true; left; {
			left = false
			for j := range queues {
				if len(queues[j]) > 0 {
					out = append(out, queues[j][0])
					queues[j] = queues[j][1:]
					left = true
				}
			}
		}
	}
	return out
}
