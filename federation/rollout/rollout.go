package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Next returns the next step for s.
//
// When the operation s holds ends in this observation (a scale that
// reached every placement's replicas, say) and the state calls for another
// (outdated pods remain), Next plans that one at once, keeping the ended
// step's completion: the reconcile that frees the mutex is also the one
// that takes it again, so no outside event is needed for the federation to
// reach its spec.
func Next(s State) Plan {
	p := newPlanner(s)
	op := s.Operation.DeepCopy()
	released := false
	if op != nil && s.Release {
		// Nothing is left half-done: a drained pod's undo is called first;
		// the release is honoured once it answered.
		if p.undoNeeded(op) {
			p.callOff(op, "the operation was released")
		}
		if op.Stage == v1alpha1.StageUndoing {
			if plan := p.undoFirst(op); plan != nil {
				p.finish(plan)
				return *plan
			}
		}
		op, released = nil, true
	}
	var plan Plan
	if op == nil {
		plan = p.start()
	} else {
		plan = p.run(op)
		if plan.Operation == nil {
			next := p.start()
			if next.Operation == nil {
				next.Message = plan.Message
			}
			plan = withCompleted(next, plan)
		}
	}
	plan.Released = released
	p.finish(&plan)
	return plan
}

// planner is one call of Next: the state, and the ordinal bookkeeping the
// plan changes.
type planner struct {
	State
	// owned[ci][pi] are the ordinals placement pi of component ci holds,
	// sorted: recorded in status, plus those of the pods observed there.
	owned [][][]int
	// next[ci] is component ci's first ordinal never handed out; nextKnown
	// whether it can be trusted (see State.OrdinalsRecorded).
	next      []int
	nextKnown []bool
	// dropped says why a recorded step was dropped (Plan.Dropped).
	dropped string
	// undone is the pod whose called-off step was undone (Plan.Undone).
	undone *PodRef
}

func newPlanner(s State) *planner {
	p := &planner{State: s}
	for ci := range s.Components {
		c := &s.Components[ci]
		next := c.NextOrdinal
		owned := make([][]int, 0, len(c.Placements))
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			set := slices.Clone(pl.Ordinals)
			for _, pod := range pl.Pods {
				set = append(set, pod.Ordinal)
			}
			slices.Sort(set)
			set = slices.Compact(set)
			if len(set) > 0 {
				next = max(next, set[len(set)-1]+1)
			}
			owned = append(owned, set)
		}
		p.owned = append(p.owned, owned)
		p.next = append(p.next, next)
		// Without a record, a member out of sight may hold ordinals at or
		// above what is seen.
		p.nextKnown = append(p.nextKnown, s.OrdinalsRecorded || allConnected(c))
	}
	return p
}

func allConnected(c *Component) bool {
	for pi := range c.Placements {
		if !c.Placements[pi].Connected {
			return false
		}
	}
	return true
}

// start takes the operation the observed state calls for, if any.
func (p *planner) start() Plan {
	t := p.needed()
	if t == "" {
		return Plan{Message: "every pod is at its update revision and available"}
	}
	started := Stamp(p.Now)
	if started.Time.Equal(p.ReleaseNames) {
		return Plan{
			Message: fmt.Sprintf("%s waits for the second after %s, which the %s annotation names (an operation is named by the second it started)",
				t, started.UTC().Format(time.RFC3339), v1alpha1.AnnotationReleaseOperation),
			RequeueAfter: started.Add(time.Second).Sub(p.Now),
		}
	}
	return p.run(&v1alpha1.Operation{Type: t, StartedTime: started})
}

// run plans the next step of operation op.
func (p *planner) run(op *v1alpha1.Operation) Plan {
	switch op.Type {
	case v1alpha1.OperationInitialize:
		return p.initialize(op)
	case v1alpha1.OperationScale:
		return p.scale(op)
	case v1alpha1.OperationUpgrade:
		return p.upgrade(op)
	case v1alpha1.OperationExpand:
		return p.expand(op)
	default:
		// Not an operation this planner knows (written by another version):
		// free the mutex and decide again from what is observed.
		return Plan{Message: fmt.Sprintf("dropped unknown operation %q", op.Type)}
	}
}

// --- Availability and the health gate.

// available reports whether pod counts as available now and, when it is
// Ready but not yet for MinReady, how long until it is.
func (p *planner) available(pod *Pod) (bool, time.Duration) {
	if !pod.Ready || pod.Terminating || pod.Failed {
		return false, 0
	}
	if p.MinReady <= 0 {
		return true, 0
	}
	left := pod.ReadySince.Add(p.MinReady).Sub(p.Now)
	if left > 0 {
		return false, left
	}
	return true, 0
}

// availableSince is when pod became available: ReadySince plus MinReady.
func (p *planner) availableSince(pod *Pod) time.Time {
	return pod.ReadySince.Add(p.MinReady)
}

// live returns the placement's pods that run or will: not terminating, not
// failed.
func live(pl *Placement) []*Pod {
	var out []*Pod
	for i := range pl.Pods {
		if !pl.Pods[i].Terminating && !pl.Pods[i].Failed {
			out = append(out, &pl.Pods[i])
		}
	}
	return out
}

// used reports whether the placement matters for safety: it wants pods or
// has some.
func used(pl *Placement) bool { return pl.Replicas > 0 || len(pl.Pods) > 0 || len(pl.Ordinals) > 0 }

// outdated reports whether pod is to be replaced by an upgrade: it is not
// at its placement's update revision, and not below the component's
// partition.
func outdated(pl *Placement, pod *Pod) bool {
	return pl.Revision != "" && !pod.Terminating && pod.Revision != pl.Revision && pod.Ordinal >= pl.Partition
}

// sight says why placement pl cannot be trusted for a disruptive step: it
// is not connected, or its member has not answered within the freshness
// bound; "" when it can.
func sight(pl *Placement) string {
	switch {
	case !pl.Connected:
		return fmt.Sprintf("member %s is not connected", pl.Member)
	case !pl.Fresh:
		return fmt.Sprintf("member %s has not answered within the freshness bound", pl.Member)
	}
	return ""
}

// scope returns component c, or every component when c is nil.
func (p *planner) scope(c *Component) []*Component {
	if c != nil {
		return []*Component{c}
	}
	all := make([]*Component, len(p.Components))
	for i := range p.Components {
		all[i] = &p.Components[i]
	}
	return all
}

// blocker says why component c (every component when c is nil) is not fully
// available, or "" when it is, with how soon a Ready pod will count.
func (p *planner) blocker(c *Component) (string, time.Duration) {
	scope := p.scope(c)
	for _, comp := range scope {
		for pi := range comp.Placements {
			pl := &comp.Placements[pi]
			if used(pl) && !pl.Connected {
				return fmt.Sprintf("member %s is not connected", pl.Member), 0
			}
		}
	}
	for _, comp := range scope {
		for pi := range comp.Placements {
			pl := &comp.Placements[pi]
			pods := slices.Clone(pl.Pods)
			slices.SortFunc(pods, func(a, b Pod) int { return a.Ordinal - b.Ordinal })
			for i := range pods {
				ok, left := p.available(&pods[i])
				if ok {
					continue
				}
				switch {
				case pods[i].Terminating:
					return fmt.Sprintf("pod %s in %s is terminating", pods[i].Name, pl.Member), 0
				case pods[i].Failed:
					return fmt.Sprintf("pod %s in %s failed", pods[i].Name, pl.Member), 0
				case left > 0:
					return fmt.Sprintf("pod %s in %s is Ready but not yet for minReadySeconds", pods[i].Name, pl.Member), left
				default:
					return fmt.Sprintf("pod %s in %s is not Ready", pods[i].Name, pl.Member), 0
				}
			}
			if n := len(live(pl)); n < int(pl.Replicas) {
				return fmt.Sprintf("component %s has %d of %d pods in %s", comp.Name, n, pl.Replicas, pl.Member), 0
			}
		}
	}
	return "", 0
}

// mayDisrupt reports whether victim may be deleted now, and if not, why.
// Every member in use must be connected and must have answered within the
// freshness bound: a pod is never deleted on the word of a member that may
// have stopped answering. Then the deletion is allowed when the federation
// is fully available, or when the victim is itself unavailable (deleting
// it cannot lower availability) and nothing else is under way: no pod
// terminating.
func (p *planner) mayDisrupt(victim *Pod) (string, time.Duration) {
	if p.Paused {
		return "paused: no pod is deleted", 0
	}
	for ci := range p.Components {
		for pi := range p.Components[ci].Placements {
			pl := &p.Components[ci].Placements[pi]
			if why := sight(pl); used(pl) && why != "" {
				return why, 0
			}
		}
	}
	why, left := p.blocker(nil)
	if why == "" {
		return "", 0
	}
	if ok, _ := p.available(victim); ok {
		return why, left
	}
	for ci := range p.Components {
		for pi := range p.Components[ci].Placements {
			pl := &p.Components[ci].Placements[pi]
			for _, pod := range pl.Pods {
				if pod.Terminating {
					return fmt.Sprintf("pod %s in %s is terminating", pod.Name, pl.Member), 0
				}
			}
		}
	}
	return "", 0
}

// --- Ordinals: which placement holds which pod identity.

// ordinalRank ranks an ordinal for keeping: a placement that holds more
// ordinals than it wants keeps those whose pods run, then those being
// replaced, then those that failed or have no pod; so scaling in removes
// a pod that is already down before one that is up.
func ordinalRank(pod *Pod) int {
	switch {
	case pod == nil:
		return 3
	case pod.Failed:
		return 2
	case pod.Terminating:
		return 1
	}
	return 0
}

// split returns, of the ordinals placement pi of component ci holds, those
// it keeps (at most its replicas, lowest ordinals among equals) and the
// surplus, each sorted.
func (p *planner) split(ci, pi int) (keep, surplus []int) {
	pl := &p.Components[ci].Placements[pi]
	byOrdinal := map[int]*Pod{}
	for i := range pl.Pods {
		byOrdinal[pl.Pods[i].Ordinal] = &pl.Pods[i]
	}
	ordered := slices.Clone(p.owned[ci][pi])
	slices.SortStableFunc(ordered, func(a, b int) int {
		if d := ordinalRank(byOrdinal[a]) - ordinalRank(byOrdinal[b]); d != 0 {
			return d
		}
		return a - b
	})
	n := min(int(pl.Replicas), len(ordered))
	keep, surplus = ordered[:n], ordered[n:]
	slices.Sort(keep)
	slices.Sort(surplus)
	return keep, surplus
}

// keeps reports whether placement pi of component ci holds ordinal o and
// keeps it.
func (p *planner) keeps(ci, pi, o int) bool {
	keep, _ := p.split(ci, pi)
	return slices.Contains(keep, o)
}

// allocate hands out a new ordinal to placement pi of component ci, or
// says why it cannot. Ordinals are handed out from the component's next
// ordinal up, never again below it, so no pod can take a name that a pod
// in a member out of sight may hold. Past MaxOrdinal, the lowest ordinal
// no placement holds is taken, and only while every placement can be
// seen.
func (p *planner) allocate(ci, pi int) (int, string) {
	c := &p.Components[ci]
	if o, ok := p.retained(ci, pi); ok {
		set := append(p.owned[ci][pi], o)
		slices.Sort(set)
		p.owned[ci][pi] = set
		return o, ""
	}
	if !p.nextKnown[ci] {
		return 0, fmt.Sprintf("no new pod of component %s until every member that may hold its pods is connected: status does not record its ordinals", c.Name)
	}
	o := p.next[ci]
	if o > MaxOrdinal {
		if !allConnected(c) {
			return 0, fmt.Sprintf("component %s has used every ordinal; a free one is taken only while every member is connected", c.Name)
		}
		held := map[int]bool{}
		for _, set := range p.owned[ci] {
			for _, x := range set {
				held[x] = true
			}
		}
		for o = 0; held[o]; o++ {
		}
		if o > MaxOrdinal {
			return 0, fmt.Sprintf("component %s holds every ordinal", c.Name)
		}
	} else {
		p.next[ci]++
	}
	set := append(p.owned[ci][pi], o)
	slices.Sort(set)
	p.owned[ci][pi] = set
	return o, ""
}

// retained returns the lowest ordinal placement pi of component ci kept
// claims of and no placement holds, if any.
func (p *planner) retained(ci, pi int) (int, bool) {
	for _, o := range p.Components[ci].Placements[pi].Retained {
		held := false
		for _, set := range p.owned[ci] {
			held = held || slices.Contains(set, o)
		}
		if !held {
			return o, true
		}
	}
	return 0, false
}

// missing returns creations for component ci: the pods of the ordinals its
// connected placements keep but show no pod for (deleted by someone else,
// replaced, or just handed out), and, when grow, new ordinals for every
// placement short of its replicas. A reason is returned when new ordinals
// cannot be handed out.
func (p *planner) missing(ci int, grow bool) ([]PodRef, string) {
	c := &p.Components[ci]
	var out []PodRef
	var blocked string
	for pi := range c.Placements {
		pl := &c.Placements[pi]
		if grow {
			for len(p.owned[ci][pi]) < int(pl.Replicas) {
				if _, why := p.allocate(ci, pi); why != "" {
					blocked = why
					break
				}
			}
		}
		if !pl.Connected || pl.Revision == "" {
			continue
		}
		keep, _ := p.split(ci, pi)
		for _, o := range keep {
			if findOrdinal(pl, o) == nil {
				out = append(out, PodRef{Component: c.Name, Member: pl.Member, Name: PodName(p.Name, c.Name, o), Ordinal: o, Revision: pl.Revision})
			}
		}
	}
	return out, blocked
}

func findPod(pl *Placement, name string) *Pod {
	for i := range pl.Pods {
		if pl.Pods[i].Name == name {
			return &pl.Pods[i]
		}
	}
	return nil
}

func findOrdinal(pl *Placement, o int) *Pod {
	for i := range pl.Pods {
		if pl.Pods[i].Ordinal == o {
			return &pl.Pods[i]
		}
	}
	return nil
}

func (p *planner) placementIndex(component, member string) (int, int) {
	for ci := range p.Components {
		if p.Components[ci].Name != component {
			continue
		}
		for pi := range p.Components[ci].Placements {
			if p.Components[ci].Placements[pi].Member == member {
				return ci, pi
			}
		}
	}
	return -1, -1
}

// --- Which operation, and its steps.

// needed returns the operation the observed state calls for, or "". A
// disconnected member's pods are unknown, not missing: they call for
// nothing until the member is back.
func (p *planner) needed() v1alpha1.OperationType {
	var pods, owned, desired int
	scale, upgrade := false, false
	for ci := range p.Components {
		for pi := range p.Components[ci].Placements {
			pl := &p.Components[ci].Placements[pi]
			owned += len(p.owned[ci][pi])
			if !pl.Connected {
				continue
			}
			pods += len(pl.Pods)
			desired += int(pl.Replicas)
			// Pods to add (new ordinals, or ordinals kept without a pod)
			// or to remove call for a scale. A failed pod does not: it is
			// replaced as a repair (Plan.Replace), whatever operation runs.
			// Nor does a surplus ordinal without a pod: it is let go.
			keep, surplus := p.split(ci, pi)
			if len(keep) != int(pl.Replicas) {
				scale = true
			}
			for _, o := range keep {
				if findOrdinal(pl, o) == nil {
					scale = true
				}
			}
			for _, o := range surplus {
				if findOrdinal(pl, o) != nil {
					scale = true
				}
			}
			for i := range pl.Pods {
				if outdated(pl, &pl.Pods[i]) && !pl.Pods[i].Failed {
					upgrade = true
				}
			}
		}
	}
	switch {
	case pods == 0 && owned == 0 && desired > 0:
		return v1alpha1.OperationInitialize
	case scale:
		return v1alpha1.OperationScale
	case upgrade:
		return v1alpha1.OperationUpgrade
	case p.nextToExpand() != nil:
		return v1alpha1.OperationExpand
	}
	return ""
}

func wait(op *v1alpha1.Operation, why string, after time.Duration) Plan {
	return Plan{Operation: op, Message: "waiting: " + why, RequeueAfter: after}
}

// waiting is wait for inFlight, which returns a plan by pointer.
func waiting(op *v1alpha1.Operation, why string, after time.Duration) *Plan {
	plan := wait(op, why, after)
	return &plan
}

// undoing is the plan that calls pod's undo: its deletion, after its
// preDelete hook, was called off for why.
func undoing(op *v1alpha1.Operation, member string, pod *Pod, why string) *Plan {
	msg := fmt.Sprintf("undoing the preDelete hook of pod %s in %s: its deletion was called off (%s)", pod.Name, member, why)
	return &Plan{Operation: op, Undo: ref(op.Component, member, pod), Message: msg}
}

func ref(component, member string, pod *Pod) *PodRef {
	return &PodRef{Component: component, Member: member, Name: pod.Name, Ordinal: pod.Ordinal, UID: pod.UID, Revision: pod.Revision}
}

// initialize creates each component's pods at once, in spec order, and
// waits for a component to be available before the next. Ordinals are
// handed out in topology order.
func (p *planner) initialize(op *v1alpha1.Operation) Plan {
	for ci := range p.Components {
		c := &p.Components[ci]
		op.Component, op.Member, op.Pod, op.PodUID = c.Name, "", "", ""
		creates, blocked := p.missing(ci, true)
		if len(creates) > 0 {
			return Plan{Operation: op, Create: creates, Message: fmt.Sprintf("creating %d pods of component %s", len(creates), c.Name)}
		}
		if blocked != "" {
			return wait(op, blocked, 0)
		}
		if why, left := p.blocker(c); why != "" {
			return wait(op, why, left)
		}
	}
	return Plan{Message: "initialized: every component's pods are available"}
}

// drop drops the step op names without taking it, for why.
func (p *planner) drop(op *v1alpha1.Operation, why string) {
	p.dropped = fmt.Sprintf("step on pod %s in %s dropped: %s", op.Pod, op.Member, why)
	clearStep(op)
}

// calledOff says why the deletion of pod, recorded in op, is no longer
// wanted, or "": the pod is no longer outdated (an upgrade) or surplus (a
// scale-in), it failed (it is replaced as such), or the FederationCluster
// is paused.
func (p *planner) calledOff(op *v1alpha1.Operation, ci, pi int, pod *Pod) string {
	pl := &p.Components[ci].Placements[pi]
	switch {
	case op.Type == v1alpha1.OperationUpgrade && !outdated(pl, pod):
		return fmt.Sprintf("pod %s is no longer outdated", pod.Name)
	case op.Type == v1alpha1.OperationScale:
		if _, surplus := p.split(ci, pi); !slices.Contains(surplus, pod.Ordinal) {
			return fmt.Sprintf("pod %s is no longer surplus", pod.Name)
		}
	case op.Type == v1alpha1.OperationInitialize:
		return "initialization deletes nothing"
	}
	if pod.Failed {
		return fmt.Sprintf("pod %s failed; it is replaced as such", pod.Name)
	}
	if p.Paused {
		return "paused: no pod is deleted"
	}
	return ""
}

// hooksOf returns the hooks of component name, or none.
func (p *planner) hooksOf(name string) Hooks {
	for ci := range p.Components {
		if p.Components[ci].Name == name {
			return p.Components[ci].Hooks
		}
	}
	return Hooks{}
}

// undoNeeded reports whether calling off op's step needs an undo: its
// preDelete hook may have been called, and the hook names an undo.
func (p *planner) undoNeeded(op *v1alpha1.Operation) bool {
	return op.Pod != "" && (op.Stage == v1alpha1.StageDraining || op.Stage == v1alpha1.StageDeleting) && p.hooksOf(op.Component).Undo
}

// setStage moves op's step to stage, stamping when it began.
func (p *planner) setStage(op *v1alpha1.Operation, stage v1alpha1.StepStage) {
	if op.Stage == stage && op.StageStartedTime != nil {
		return
	}
	op.Stage = stage
	t := Stamp(p.Now)
	op.StageStartedTime = &t
}

// clearStep clears op's step.
func clearStep(op *v1alpha1.Operation) {
	op.Pod, op.PodUID, op.TargetRevision, op.Stage, op.StageStartedTime = "", "", "", "", nil
	op.NextPod, op.NextPodUID = "", ""
}

// callOff moves op's drained step to Undoing, for why.
func (p *planner) callOff(op *v1alpha1.Operation, why string) {
	p.setStage(op, v1alpha1.StageUndoing)
	p.dropped = fmt.Sprintf("step on pod %s in %s called off: %s; undoing its preDelete hook", op.Pod, op.Member, why)
}

// stageFor returns how long op's stage has lasted.
//
// status.operation.stageStartedTime is a metav1.Time, stored to the whole
// second: a stage that began at s.9 reads back as s. Counting from s
// would end a 1 s hook timeout as soon as it began, and with
// onTimeout Proceed delete a pod whose hook was never given its time.
// The stage is counted from the next whole second instead, before and
// after the round trip alike: a timeout ends up to 1 s late, never early.
func (p *planner) stageFor(op *v1alpha1.Operation) time.Duration {
	if op.StageStartedTime == nil {
		return 0
	}
	return max(p.Now.Sub(op.StageStartedTime.Truncate(time.Second).Add(time.Second)), 0)
}

// callFailure describes the last failure of the step's hook, for the
// message: "" when it has not failed.
func (p *planner) callFailure() string {
	if p.Calls.Failed == "" {
		return ""
	}
	return fmt.Sprintf(" (attempt %d failed: %s)", p.Calls.Failures, p.Calls.Failed)
}

// health returns, for pods, whether every one's gate has an answer, and
// the failures as "pod in member: why", in order.
func (p *planner) health(pods []PodRef) (answered bool, failing []string) {
	answered = true
	for _, r := range pods {
		why, ok := p.Calls.Health[r.Member+"/"+r.Name]
		switch {
		case !ok:
			answered = false
		case why != "":
			failing = append(failing, fmt.Sprintf("pod %s in %s: %s", r.Name, r.Member, why))
		}
	}
	return answered, failing
}

// gatePods returns the pods of component ci that its postReady gate calls:
// every live pod in a connected placement but skip (when not nil).
func (p *planner) gatePods(ci int, skip *Pod) []PodRef {
	c := &p.Components[ci]
	var out []PodRef
	for pi := range c.Placements {
		pl := &c.Placements[pi]
		if !pl.Connected {
			continue
		}
		pods := live(pl)
		slices.SortFunc(pods, func(a, b *Pod) int { return a.Ordinal - b.Ordinal })
		for _, pod := range pods {
			if skip == nil || pod.UID != skip.UID {
				out = append(out, *ref(c.Name, pl.Member, pod))
			}
		}
	}
	return out
}

// gate checks component ci's postReady gate before victim is deleted:
// every other pod of the component must answer 2xx. It returns nil when
// the deletion may go on, else the plan that waits (or asks for the
// answers).
func (p *planner) gate(op *v1alpha1.Operation, ci int, victim *Pod) *Plan {
	c := &p.Components[ci]
	if !c.Hooks.PostReady {
		return nil
	}
	pods := p.gatePods(ci, victim)
	answered, failing := p.health(pods)
	switch {
	case !answered:
		return &Plan{Operation: op, Check: pods, Message: fmt.Sprintf("checking the postReady gate of component %s before deleting pod %s", c.Name, victim.Name)}
	case len(failing) > 0:
		return &Plan{Operation: op, Check: pods, Hook: v1alpha1.ReasonHealthCheckFailed,
			Message: fmt.Sprintf("waiting: the postReady gate of component %s fails (%s); no pod of it is deleted until it passes", c.Name, strings.Join(failing, "; "))}
	}
	return nil
}

// begin starts the step that deletes victim in placement pl of component
// ci: through its preDelete hook when the component has one (stage
// Draining: the hook is called once status records the stage), else
// straight to the deletion. message says what the deletion is for.
func (p *planner) begin(op *v1alpha1.Operation, ci int, pl *Placement, victim *Pod, target, message string) Plan {
	c := &p.Components[ci]
	op.Component, op.Member, op.Pod, op.PodUID, op.TargetRevision = c.Name, pl.Member, victim.Name, victim.UID, target
	op.Stage = ""
	op.NextPod, op.NextPodUID = "", ""
	if c.Hooks.PreDelete {
		p.setStage(op, v1alpha1.StageDraining)
		msg := fmt.Sprintf("draining pod %s in %s (preDelete hook) before %s", victim.Name, pl.Member, message)
		return Plan{Operation: op, Drain: ref(c.Name, pl.Member, victim), Message: msg}
	}
	p.setStage(op, v1alpha1.StageDeleting)
	return Plan{Operation: op, Delete: ref(c.Name, pl.Member, victim), Message: message}
}

// inFlight handles the pod named by op.Pod. It returns a plan while the step
// is still under way, or nil (with op.Pod cleared and completed set) when
// the step is done, moot or dropped, and the next one may be chosen.
//
// A step goes through stages, recorded in op.Stage before each begins:
// Draining (the preDelete hook, when the component has one), Deleting,
// WaitingReady (for the replacement or the new pod), Verifying (the
// postReady gate, when the component has one); Undoing instead when a
// step whose preDelete hook may have been called is called off.
func (p *planner) inFlight(op *v1alpha1.Operation, completed *Plan) *Plan {
	if op.Pod == "" {
		return nil
	}
	ci, pi := p.placementIndex(op.Component, op.Member)
	ordinal, named := ParseOrdinal(p.Name, op.Component, op.Pod)
	if ci < 0 || !named {
		// The topology no longer has this placement: the step is moot.
		clearStep(op)
		return nil
	}
	pl := &p.Components[ci].Placements[pi]
	hooks := p.Components[ci].Hooks
	if !pl.Connected {
		return waiting(op, fmt.Sprintf("member %s is not connected", pl.Member), 0)
	}
	pod := findPod(pl, op.Pod)
	old := pod != nil && op.PodUID != "" && pod.UID == op.PodUID
	if op.Stage == v1alpha1.StageUndoing {
		return p.undoing(op, pl, pod, old)
	}
	removal := op.Type == v1alpha1.OperationScale && op.PodUID != ""
	switch {
	case old:
		// The old instance is still there: drain it, or delete it (again:
		// its deletion may have been acknowledged but not seen to
		// happen), only while the step is still wanted.
		if pod.Terminating {
			return waiting(op, fmt.Sprintf("pod %s in %s is terminating", pod.Name, pl.Member), 0)
		}
		if why := p.calledOff(op, ci, pi, pod); why != "" {
			if p.undoNeeded(op) {
				p.callOff(op, why)
				return undoing(op, pl.Member, pod, why)
			}
			p.drop(op, why)
			return nil
		}
		return p.deleting(op, pl, pod, hooks)
	case removal:
		// Scale-in: the old instance is gone, as a member that answers
		// says.
		if !pl.Fresh {
			return waiting(op, fmt.Sprintf("member %s has not answered within the freshness bound: the removal of pod %s is not confirmed", pl.Member, op.Pod), 0)
		}
		*completed = Plan{Completed: &PodRef{Component: op.Component, Member: op.Member, Name: op.Pod, Ordinal: ordinal, UID: op.PodUID}, CompletedAt: p.Now}
		clearStep(op)
		return nil
	case pod == nil:
		if !p.keeps(ci, pi, ordinal) {
			// Scaled back before the pod came: nothing to do.
			clearStep(op)
			return nil
		}
		op.TargetRevision = pl.Revision
		p.setStage(op, v1alpha1.StageWaitingReady)
		return &Plan{
			Operation: op,
			Create:    []PodRef{{Component: op.Component, Member: pl.Member, Name: op.Pod, Ordinal: ordinal, Revision: pl.Revision}},
			Message:   fmt.Sprintf("creating pod %s in %s", op.Pod, pl.Member),
		}
	case pod.Terminating:
		return waiting(op, fmt.Sprintf("pod %s in %s is terminating", pod.Name, pl.Member), 0)
	case pod.Failed:
		return waiting(op, fmt.Sprintf("pod %s in %s failed and is being replaced", pod.Name, pl.Member), 0)
	}
	// pod is the replacement, or the new pod of a scale-out.
	if op.Stage != v1alpha1.StageVerifying {
		p.setStage(op, v1alpha1.StageWaitingReady)
	}
	if ok, left := p.available(pod); !ok {
		if outdated(pl, pod) {
			// The spec moved on while this pod was not available: it is
			// down and outdated, so replacing it costs nothing. Do not
			// wait for it to come up (kubernetes#67250).
			p.drop(op, fmt.Sprintf("pod %s is outdated and not available", pod.Name))
			return nil
		}
		return waiting(op, fmt.Sprintf("pod %s in %s to become available", pod.Name, pl.Member), left)
	}
	if !pl.Fresh {
		return waiting(op, fmt.Sprintf("member %s has not answered within the freshness bound: pod %s is not confirmed available", pl.Member, pod.Name), 0)
	}
	if plan := p.verifying(op, ci, pl, pod, hooks); plan != nil {
		return plan
	}
	*completed = Plan{Completed: ref(op.Component, pl.Member, pod), CompletedAt: p.availableSince(pod)}
	clearStep(op)
	return nil
}

// recreate adds to plan, a step still under way, the pods that are missing
// under their names anywhere (deleted by someone else, evicted): they are
// down already, so bringing them back costs nothing, and a step that waits
// (for a hook, a gate, a replacement) must not keep them down.
func (p *planner) recreate(plan *Plan) {
	for ci := range p.Components {
		missing, _ := p.missing(ci, false)
		for _, m := range missing {
			if !slices.ContainsFunc(plan.Create, func(c PodRef) bool { return c.Member == m.Member && c.Name == m.Name }) {
				plan.Create = append(plan.Create, m)
			}
		}
	}
}

// needsGrowth reports whether a connected placement holds fewer ordinals
// than its replicas: new pods are due, which only the operation's own
// steps create.
func (p *planner) needsGrowth() bool {
	for ci := range p.Components {
		for pi := range p.Components[ci].Placements {
			pl := &p.Components[ci].Placements[pi]
			if pl.Connected && pl.Revision != "" && len(p.owned[ci][pi]) < int(pl.Replicas) {
				return true
			}
		}
	}
	return false
}

// deleting handles the old instance of a step that is still wanted: its
// preDelete hook first (stage Draining), then its deletion (stage
// Deleting) once the federation allows it. A drained pod waits, drained,
// for that; a step recorded without a hook whose deletion is not allowed
// now is dropped and planned again.
func (p *planner) deleting(op *v1alpha1.Operation, pl *Placement, pod *Pod, hooks Hooks) *Plan {
	var plan Plan
	if op.Stage == v1alpha1.StageDraining {
		switch {
		case p.Calls.Drained:
			plan.Message = fmt.Sprintf("pod %s in %s is drained; ", pod.Name, pl.Member)
		case p.stageFor(op) > hooks.PreDeleteTimeout && hooks.Proceed:
			plan.Proceeded = true
			plan.Message = fmt.Sprintf("the preDelete hook of pod %s in %s has not succeeded within %s (onTimeout Proceed)%s; ",
				pod.Name, pl.Member, hooks.PreDeleteTimeout, p.callFailure())
		case p.stageFor(op) > hooks.PreDeleteTimeout:
			return &Plan{Operation: op, Hook: v1alpha1.ReasonHookTimedOut,
				Message: fmt.Sprintf("halted: the preDelete hook of pod %s in %s has not succeeded within %s%s; the pod is not deleted. "+
					"Fix it and release the operation (annotation %s), or change the spec to call the step off",
					pod.Name, pl.Member, hooks.PreDeleteTimeout, p.callFailure(), v1alpha1.AnnotationReleaseOperation)}
		default:
			msg := fmt.Sprintf("draining pod %s in %s (preDelete hook)%s", pod.Name, pl.Member, p.callFailure())
			plan := &Plan{Operation: op, Drain: ref(op.Component, pl.Member, pod), Message: msg}
			if p.Calls.Failed != "" {
				plan.Hook = v1alpha1.ReasonHookFailing
			}
			return plan
		}
		p.setStage(op, v1alpha1.StageDeleting)
	}
	if why, left := p.mayDisrupt(pod); why != "" {
		switch {
		case hooks.PreDelete && op.Stage == v1alpha1.StageDeleting && p.needsGrowth():
			// New pods are due, which only the operation's next steps
			// create: waiting here, drained, would wait forever.
			why = "new pods are due first: " + why
			if p.undoNeeded(op) {
				p.callOff(op, why)
				return undoing(op, pl.Member, pod, why)
			}
		case hooks.PreDelete && op.Stage == v1alpha1.StageDeleting:
			return waiting(op, fmt.Sprintf("%s; pod %s in %s is drained and waits to be deleted", why, pod.Name, pl.Member), left)
		}
		p.drop(op, why)
		return nil
	}
	p.setStage(op, v1alpha1.StageDeleting)
	plan.Operation, plan.Delete = op, ref(op.Component, pl.Member, pod)
	plan.Message += fmt.Sprintf("deleting pod %s in %s", pod.Name, pl.Member)
	return &plan
}

// undoFirst is undoing for op's step, wherever it is: the plan that calls
// the undo, or nil once it is done or moot.
func (p *planner) undoFirst(op *v1alpha1.Operation) *Plan {
	ci, pi := p.placementIndex(op.Component, op.Member)
	if ci < 0 {
		clearStep(op)
		return nil
	}
	pl := &p.Components[ci].Placements[pi]
	if !pl.Connected {
		return waiting(op, fmt.Sprintf("member %s is not connected", pl.Member), 0)
	}
	pod := findPod(pl, op.Pod)
	return p.undoing(op, pl, pod, pod != nil && op.PodUID != "" && pod.UID == op.PodUID)
}

// undoing calls the undo of a called-off step's preDelete hook until it
// answers 2xx, or until the pod it would undo is gone; then the step is
// dropped and planned again.
func (p *planner) undoing(op *v1alpha1.Operation, pl *Placement, pod *Pod, old bool) *Plan {
	switch {
	case !old || pod.Terminating:
		p.drop(op, fmt.Sprintf("called off; pod %s is gone, nothing to undo", op.Pod))
		return nil
	case p.Calls.Undone:
		undone := ref(op.Component, pl.Member, pod)
		p.drop(op, "called off and undone")
		p.undone = undone
		return nil
	}
	plan := &Plan{Operation: op, Undo: ref(op.Component, pl.Member, pod),
		Message: fmt.Sprintf("undoing the preDelete hook of pod %s in %s: its deletion was called off%s", pod.Name, pl.Member, p.callFailure())}
	if p.Calls.Failed != "" {
		plan.Hook = v1alpha1.ReasonHookFailing
	}
	return plan
}

// verifying checks the postReady gate after pod, the step's new or
// replaced pod, became available: pod only (scope Pod) or every pod of its
// component. It returns nil when the gate passes (or the component has
// none), else the plan that waits for it.
func (p *planner) verifying(op *v1alpha1.Operation, ci int, pl *Placement, pod *Pod, hooks Hooks) *Plan {
	if !hooks.PostReady {
		return nil
	}
	p.setStage(op, v1alpha1.StageVerifying)
	pods := []PodRef{*ref(op.Component, pl.Member, pod)}
	if hooks.ComponentScope {
		pods = p.gatePods(ci, nil)
	}
	answered, failing := p.health(pods)
	switch {
	case !answered:
		return &Plan{Operation: op, Check: pods, Message: fmt.Sprintf("verifying pod %s in %s (postReady gate)", pod.Name, pl.Member)}
	case len(failing) == 0:
		return nil
	case p.stageFor(op) > hooks.PostReadyTimeout:
		return &Plan{Operation: op, Check: pods, Hook: v1alpha1.ReasonHookTimedOut,
			Message: fmt.Sprintf("halted: the postReady gate after pod %s in %s has not passed within %s (%s); nothing is deleted until it passes",
				pod.Name, pl.Member, hooks.PostReadyTimeout, strings.Join(failing, "; "))}
	}
	return &Plan{Operation: op, Check: pods, Hook: v1alpha1.ReasonHookFailing,
		Message: fmt.Sprintf("verifying pod %s in %s: the postReady gate fails (%s)", pod.Name, pl.Member, strings.Join(failing, "; "))}
}

// withCompleted copies the completion facts of done into plan.
func withCompleted(plan Plan, done Plan) Plan {
	plan.Completed, plan.CompletedAt = done.Completed, done.CompletedAt
	return plan
}

// scale brings every placement to its replicas, one pod at a time. Pods of
// ordinals a placement keeps but does not show come back first, under
// their names, all at once (they are down already). New pods come next,
// each at a new ordinal and each waited for until available: capacity is
// added before any is taken away, so a scale-in never waits on a shortfall
// that only a later scale-out would fill. Then surplus pods are deleted,
// highest ordinal first, each waited for until gone.
func (p *planner) scale(op *v1alpha1.Operation) Plan {
	var done Plan
	if plan := p.inFlight(op, &done); plan != nil {
		p.recreate(plan)
		return *plan
	}
	var creates []PodRef
	for ci := range p.Components {
		c, _ := p.missing(ci, false)
		creates = append(creates, c...)
	}
	if len(creates) > 0 {
		op.Member, op.Pod, op.PodUID = "", "", ""
		return withCompleted(Plan{Operation: op, Create: creates, Message: fmt.Sprintf("creating %d missing pods under their names", len(creates))}, done)
	}
	var unreachable []string
	for ci := range p.Components {
		c := &p.Components[ci]
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			if len(p.owned[ci][pi]) >= int(pl.Replicas) {
				continue
			}
			if !pl.Connected {
				unreachable = append(unreachable, pl.Member)
				continue
			}
			o, why := p.allocate(ci, pi)
			if why != "" {
				op.Component = c.Name
				return withCompleted(wait(op, why, 0), done)
			}
			create := PodRef{Component: c.Name, Member: pl.Member, Name: PodName(p.Name, c.Name, o), Ordinal: o, Revision: pl.Revision}
			op.Component, op.Member, op.Pod, op.PodUID, op.TargetRevision = c.Name, pl.Member, create.Name, "", pl.Revision
			op.Stage = ""
			p.setStage(op, v1alpha1.StageWaitingReady)
			return withCompleted(Plan{Operation: op, Create: []PodRef{create},
				Message: fmt.Sprintf("adding pod %s to %s", create.Name, pl.Member)}, done)
		}
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			if !pl.Connected {
				continue
			}
			_, surplus := p.split(ci, pi)
			var victim *Pod
			for _, o := range slices.Backward(surplus) {
				if pod := findOrdinal(pl, o); pod != nil && !pod.Terminating && !pod.Failed {
					victim = pod
					break
				}
			}
			if victim == nil {
				continue
			}
			op.Component, op.Member = c.Name, pl.Member
			if why, left := p.mayDisrupt(victim); why != "" {
				return withCompleted(wait(op, why, left), done)
			}
			if plan := p.gate(op, ci, victim); plan != nil {
				return withCompleted(*plan, done)
			}
			return withCompleted(p.begin(op, ci, pl, victim, "", fmt.Sprintf("removing pod %s from %s", victim.Name, pl.Member)), done)
		}
	}
	if len(unreachable) > 0 {
		return withCompleted(wait(op, fmt.Sprintf("member %s is not connected", strings.Join(slices.Compact(unreachable), ", ")), 0), done)
	}
	return withCompleted(Plan{Message: "scaled: every placement has its replicas"}, done)
}

// upgrade replaces outdated pods one at a time: components in spec order,
// members taking turns in topology order, highest ordinal first. Missing
// pods are created first: the federation must be whole before a pod is
// taken away.
func (p *planner) upgrade(op *v1alpha1.Operation) Plan {
	var done Plan
	next, nextUID := op.NextPod, op.NextPodUID
	plan := p.inFlight(op, &done)
	if plan == nil && p.resume(op, next, nextUID) {
		// The acknowledged next step was taken before status recorded it;
		// its completion, if it is done too, goes unreported.
		var resumed Plan
		plan = p.inFlight(op, &resumed)
	}
	if plan != nil {
		p.recreate(plan)
		p.foresee(op)
		return *plan
	}
	var creates []PodRef
	var blocked string
	for ci := range p.Components {
		c, why := p.missing(ci, true)
		creates = append(creates, c...)
		if blocked == "" {
			blocked = why
		}
	}
	if len(creates) > 0 {
		return withCompleted(Plan{Operation: op, Create: creates, Message: fmt.Sprintf("creating %d missing pods", len(creates))}, done)
	}
	if blocked != "" {
		return withCompleted(wait(op, blocked, 0), done)
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		pl, victim := p.nextVictim(c, op, "")
		if victim == nil {
			continue
		}
		if op.Component != c.Name {
			// A new component: its turns start from its first member,
			// even if it waits first (op.Member is the previous
			// component's).
			op.Component, op.Member = c.Name, ""
		}
		if why, left := p.mayDisrupt(victim); why != "" {
			return withCompleted(wait(op, why, left), done)
		}
		if plan := p.gate(op, ci, victim); plan != nil {
			return withCompleted(*plan, done)
		}
		plan := p.begin(op, ci, pl, victim, pl.Revision, fmt.Sprintf("replacing pod %s in %s", victim.Name, pl.Member))
		p.foresee(op)
		return withCompleted(plan, done)
	}
	if why, left := p.blocker(nil); why != "" {
		// Nothing outdated is left, but the last step's effects are not all
		// available yet (a missing pod in a disconnected member, say).
		return withCompleted(wait(op, why, left), done)
	}
	return withCompleted(Plan{Message: "upgraded: every pod is at its update revision"}, done)
}

// foresee records in op (op.NextPod, op.NextPodUID) the pod the upgrade's
// next step will replace, from the moment op's step deletes its pod until
// its replacement has passed (stages Deleting, WaitingReady and
// Verifying): the victim nextVictim picks now, op's own pod left out, which
// is the one it picks once the step completes unless the state changes
// meanwhile. Recording it acknowledges that step off the critical path
// (Operation.NextPod): it rides on the status write that records the
// deletion, so nothing is written between the replacement's Ready and the
// next deletion. Nothing is recorded at other stages, or when the next
// victim's component has a preDelete hook (its Draining stage is written
// before the hook is called anyway).
func (p *planner) foresee(op *v1alpha1.Operation) {
	op.NextPod, op.NextPodUID = "", ""
	switch op.Stage {
	case v1alpha1.StageDeleting, v1alpha1.StageWaitingReady, v1alpha1.StageVerifying:
	default:
		return
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		_, victim := p.nextVictim(c, op, op.Pod)
		if victim == nil {
			continue
		}
		if !c.Hooks.PreDelete {
			op.NextPod, op.NextPodUID = victim.Name, victim.UID
		}
		return
	}
}

// resume makes the step on pod (UID uid), recorded as op's nextPod, op's
// step when it was taken already: its deletion was sent on that
// acknowledgement (Operation.NextPod) but status did not record it (the
// write that follows the act failed, or another manager's write replaced
// it). It is taken when the acknowledged instance is terminating or gone;
// the step then goes on from stage Deleting in its placement, so that the
// member turns continue from it. It reports whether op now holds that step.
func (p *planner) resume(op *v1alpha1.Operation, pod string, uid types.UID) bool {
	if pod == "" || op.Pod != "" {
		return false
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		ordinal, ok := ParseOrdinal(p.Name, c.Name, pod)
		if !ok {
			continue
		}
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			found := findPod(pl, pod)
			if found == nil && !slices.Contains(p.owned[ci][pi], ordinal) {
				continue
			}
			if !pl.Connected || (found != nil && found.UID == uid && !found.Terminating) {
				return false
			}
			op.Component, op.Member, op.Pod, op.PodUID, op.TargetRevision = c.Name, pl.Member, pod, uid, pl.Revision
			op.Stage = ""
			p.setStage(op, v1alpha1.StageDeleting)
			return true
		}
		return false
	}
	return false
}

// nextVictim picks component c's next outdated pod. Members take turns in
// topology order, starting after op.Member when the previous step was in
// this component; within a member, the highest ordinal goes first. An
// outdated pod that is already unavailable goes before the others: replacing
// it costs no availability. Failed pods are not victims: they are replaced
// as failed pods (Plan.Replace); nor is the pod named skip (the step under
// way's own, when foresee looks past it).
func (p *planner) nextVictim(c *Component, op *v1alpha1.Operation, skip string) (*Placement, *Pod) {
	n := len(c.Placements)
	start := 0
	if op.Component == c.Name && op.Member != "" {
		for i := range c.Placements {
			if c.Placements[i].Member == op.Member {
				start = i + 1
				break
			}
		}
	}
	var firstPl *Placement
	var first *Pod
	for k := range n {
		pl := &c.Placements[(start+k)%n]
		if !pl.Connected {
			continue
		}
		var best *Pod
		for i := range pl.Pods {
			pod := &pl.Pods[i]
			if !outdated(pl, pod) || pod.Failed || pod.Name == skip {
				continue
			}
			if ok, _ := p.available(pod); !ok {
				return pl, pod
			}
			if best == nil || pod.Ordinal > best.Ordinal {
				best = pod
			}
		}
		if best != nil && first == nil {
			firstPl, first = pl, best
		}
	}
	return firstPl, first
}

// --- Expanding claims.

// grow returns the claims of pod to grow: smaller than their template, in
// a StorageClass that allows expansion.
func grow(pod *Pod) []Claim {
	var out []Claim
	for _, c := range pod.Claims {
		if c.Desired > c.Requested && c.Expandable {
			out = append(out, c)
		}
	}
	return out
}

// resizing reports whether one of pod's claims was asked for more than it
// has yet.
func resizing(pod *Pod) bool {
	for _, c := range pod.Claims {
		if c.Requested > c.Capacity {
			return true
		}
	}
	return false
}

// expansion is one pod whose claims grow.
type expansion struct {
	component string
	pl        *Placement
	pod       *Pod
}

// nextToExpand returns the first pod (spec order, lowest ordinal first)
// of a connected placement with claims to grow, or nil.
func (p *planner) nextToExpand() *expansion {
	for ci := range p.Components {
		c := &p.Components[ci]
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			if !pl.Connected {
				continue
			}
			pods := live(pl)
			slices.SortFunc(pods, func(a, b *Pod) int { return a.Ordinal - b.Ordinal })
			for _, pod := range pods {
				if len(grow(pod)) > 0 {
					return &expansion{component: c.Name, pl: pl, pod: pod}
				}
			}
		}
	}
	return nil
}

func (x *expansion) plan(op *v1alpha1.Operation) Plan {
	op.Component, op.Member, op.Pod, op.PodUID = x.component, x.pl.Member, x.pod.Name, ""
	podRef := *ref(x.component, x.pl.Member, x.pod)
	plan := Plan{Operation: op, Message: fmt.Sprintf("expanding the claims of pod %s in %s", x.pod.Name, x.pl.Member)}
	for _, c := range grow(x.pod) {
		plan.Expand = append(plan.Expand, ClaimRef{Pod: podRef, Name: c.Name, Desired: c.Desired})
	}
	return plan
}

// expand grows claims one pod at a time: a pod's claims are patched to
// their template's size, and the next pod's only once the claims report
// that capacity, the pacing of every other step. Expansion in place does
// not restart pods, so it is not a disruption; it still runs alone, under
// the mutex.
func (p *planner) expand(op *v1alpha1.Operation) Plan {
	var done Plan
	if op.Pod != "" {
		ci, pi := p.placementIndex(op.Component, op.Member)
		if ci >= 0 {
			pl := &p.Components[ci].Placements[pi]
			if !pl.Connected {
				return wait(op, fmt.Sprintf("member %s is not connected", pl.Member), 0)
			}
			if pod := findPod(pl, op.Pod); pod != nil && !pod.Terminating {
				switch {
				case len(grow(pod)) > 0:
					return (&expansion{component: op.Component, pl: pl, pod: pod}).plan(op)
				case resizing(pod):
					if t := p.needed(); t == v1alpha1.OperationScale || t == v1alpha1.OperationUpgrade {
						// Resizing is the storage's work now, and a
						// resize that never ends must not hold the
						// rollout (a fix forward, say): let it go first.
						return Plan{Message: fmt.Sprintf("the claims of pod %s in %s are resizing; %s goes first", pod.Name, pl.Member, t)}
					}
					return wait(op, fmt.Sprintf("the claims of pod %s in %s to reach their size", pod.Name, pl.Member), 0)
				}
				done = Plan{Completed: ref(op.Component, pl.Member, pod), CompletedAt: p.Now}
			}
		}
		op.Pod = ""
	}
	if x := p.nextToExpand(); x != nil {
		return withCompleted(x.plan(op), done)
	}
	return withCompleted(Plan{Message: "expanded: every claim has its template's size"}, done)
}

// --- What every plan carries besides its step.

// finish adds to plan what does not depend on the step: failed pods to
// replace, the ordinals status must record, the pod stuck past the
// progress deadline, and why a recorded step was dropped.
func (p *planner) finish(plan *Plan) {
	if !p.Paused {
		for ci := range p.Components {
			c := &p.Components[ci]
			for pi := range c.Placements {
				pl := &c.Placements[pi]
				if !pl.Connected {
					continue
				}
				for i := range pl.Pods {
					if pod := &pl.Pods[i]; pod.Failed && !pod.Terminating && pod.UID != "" {
						plan.Replace = append(plan.Replace, *ref(c.Name, pl.Member, pod))
					}
				}
			}
		}
	}
	if len(plan.Replace) > 0 {
		names := make([]string, 0, len(plan.Replace))
		for _, r := range plan.Replace {
			names = append(names, fmt.Sprintf("%s in %s", r.Name, r.Member))
		}
		plan.Message = fmt.Sprintf("replacing failed pod %s; %s", strings.Join(names, ", "), plan.Message)
	}
	plan.Undone = p.undone
	if p.dropped != "" {
		plan.Dropped = p.dropped
		plan.Message = p.dropped + "; " + plan.Message
	}
	p.recordOrdinals(plan)
	p.deadline(plan)
	for ci := range p.Components {
		for pi := range p.Components[ci].Placements {
			pl := &p.Components[ci].Placements[pi]
			for i := range pl.Pods {
				for _, c := range pl.Pods[i].Claims {
					if c.Desired > c.Requested && !c.Expandable {
						plan.Unexpandable = append(plan.Unexpandable, c.Name+" in "+pl.Member)
					}
				}
			}
		}
	}
}

// recordOrdinals fills plan.Ordinals: what each placement holds after this
// plan. A connected placement lets go of the surplus ordinals it shows no
// pod for (removed by a scale-in, or never recreated).
func (p *planner) recordOrdinals(plan *Plan) {
	for ci := range p.Components {
		c := &p.Components[ci]
		co := ComponentOrdinals{Component: c.Name, NextOrdinal: p.next[ci], Placements: map[string][]int{}}
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			set := p.owned[ci][pi]
			if pl.Connected {
				_, surplus := p.split(ci, pi)
				set = slices.DeleteFunc(slices.Clone(set), func(o int) bool {
					return slices.Contains(surplus, o) && findOrdinal(pl, o) == nil
				})
			}
			if len(set) > 0 {
				co.Placements[pl.Member] = set
			}
		}
		plan.Ordinals = append(plan.Ordinals, co)
	}
}

// deadline names, when spec.progressDeadlineSeconds is set, the first pod
// (spec order) that has not been available for longer than it, counted
// from its creation or its last Ready transition, whichever is later; and
// asks to be woken when the next pod would reach it.
func (p *planner) deadline(plan *Plan) {
	if p.ProgressDeadline <= 0 {
		return
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			if !pl.Connected {
				continue
			}
			for i := range pl.Pods {
				pod := &pl.Pods[i]
				if ok, _ := p.available(pod); ok || pod.Terminating || pod.UID == "" {
					continue
				}
				since := pod.Created
				if pod.ReadySince.After(since) {
					since = pod.ReadySince
				}
				left := since.Add(p.ProgressDeadline).Sub(p.Now)
				switch {
				case left <= 0 && plan.Stuck == nil:
					plan.Stuck, plan.StuckFor = ref(c.Name, pl.Member, pod), p.Now.Sub(since)
				case left > 0 && (plan.RequeueAfter == 0 || left < plan.RequeueAfter):
					plan.RequeueAfter = left
				}
			}
		}
	}
}

// Stamp returns t as status records it, at the API's precision: whole
// seconds, since metav1.Time serialises as RFC 3339 without fractions. A
// time stamped so equals itself read back after the status write, so a
// reconcile plans from the same times before and after a restart, and a
// time that moved within its second is no change to write.
func Stamp(t time.Time) metav1.Time {
	return metav1.NewTime(t.Truncate(time.Second))
}
