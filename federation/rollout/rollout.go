package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Pod is what the planner needs to know of one observed pod.
type Pod struct {
	Name    string
	UID     types.UID
	Ordinal int
	// Revision is the pod's fedop.io/revision label.
	Revision string
	// Ready is the pod's Ready condition; ReadySince its last transition.
	Ready      bool
	ReadySince time.Time
	// Terminating is true once the pod has a deletionTimestamp.
	Terminating bool
}

// Placement is one component's part in one member: desired and observed.
type Placement struct {
	Member string
	// Replicas is the desired number of pods. A member the component no
	// longer names but still has pods in is passed with Replicas 0.
	Replicas int32
	// Revision is the placement's update revision; empty for a member the
	// component no longer names.
	Revision string
	// Connected is true when the member is registered, reachable and its
	// cache synced. Pods of a disconnected member are last known, not known.
	Connected bool
	// Pods are the component's pods observed in the member, any order.
	Pods []Pod
}

// Component is one component with its placements in topology order.
type Component struct {
	Name       string
	Placements []Placement
}

// State is everything the planner decides from.
type State struct {
	// Name is the FederationCluster's name, the prefix of its pod names.
	Name string
	// Components in spec order.
	Components []Component
	// Operation is status.operation as read; nil when the mutex is free.
	Operation *v1alpha1.Operation
	Paused    bool
	// MinReady is spec.minReadySeconds.
	MinReady time.Duration
	// Now is the time of the observation.
	Now time.Time
}

// PodRef names a pod to act on.
type PodRef struct {
	Component string
	Member    string
	Name      string
	Ordinal   int
	// UID, for a deletion, is the precondition: only this instance may go.
	UID types.UID
	// Revision, for a creation, is the update revision to create it at.
	Revision string
}

// Plan is the next step.
type Plan struct {
	// Operation is the value status.operation must hold, written with a
	// resourceVersion precondition, before any action below is taken; nil
	// frees the mutex.
	Operation *v1alpha1.Operation
	// Create lists pods to create. Creation is never disruptive.
	Create []PodRef
	// Delete is the one disruptive action, if any.
	Delete *PodRef
	// Message says what the step does or waits for (Progressing message).
	Message string
	// RequeueAfter, when positive, is how soon something changes without an
	// event: a Ready pod reaching minReadySeconds.
	RequeueAfter time.Duration
	// Completed is the pod whose step this observation finished (replaced
	// and available, created and available, or removed), if any.
	Completed *PodRef
	// CompletedAt is when Completed became available or was seen gone.
	CompletedAt time.Time
}

// PodName returns the name of ordinal's pod of component in the
// FederationCluster name: <name>-<component>-<ordinal>.
func PodName(name, component string, ordinal int) string {
	return name + "-" + component + "-" + strconv.Itoa(ordinal)
}

// ParseOrdinal returns the ordinal of podName when it is a pod name of
// component in the FederationCluster name, and false otherwise.
func ParseOrdinal(name, component, podName string) (int, bool) {
	rest, ok := strings.CutPrefix(podName, name+"-"+component+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Next returns the next step for s.
//
// When the operation s holds ends in this observation (a scale that
// reached every placement's replicas, say) and the state calls for another
// (outdated pods remain), Next plans that one at once, keeping the ended
// step's completion: the reconcile that frees the mutex is also the one
// that takes it again, so no outside event is needed for the federation to
// reach its spec.
func Next(s State) Plan {
	p := planner{State: s}
	op := s.Operation.DeepCopy()
	if op == nil {
		return p.start()
	}
	plan := p.run(op)
	if plan.Operation != nil {
		return plan
	}
	next := p.start()
	if next.Operation == nil {
		next.Message = plan.Message
	}
	return withCompleted(next, plan)
}

// start takes the operation the observed state calls for, if any.
func (p *planner) start() Plan {
	t := p.needed()
	if t == "" {
		return Plan{Message: "every pod is at its update revision and available"}
	}
	return p.run(&v1alpha1.Operation{Type: t, StartedTime: metav1.NewTime(p.Now)})
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
	default:
		// Not an operation this planner knows (written by another version):
		// free the mutex and decide again from what is observed.
		return Plan{Message: fmt.Sprintf("dropped unknown operation %q", op.Type)}
	}
}

type planner struct {
	State
}

// available reports whether pod counts as available now and, when it is
// Ready but not yet for MinReady, how long until it is.
func (p *planner) available(pod *Pod) (bool, time.Duration) {
	if !pod.Ready || pod.Terminating {
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

func live(pl *Placement) []*Pod {
	var out []*Pod
	for i := range pl.Pods {
		if !pl.Pods[i].Terminating {
			out = append(out, &pl.Pods[i])
		}
	}
	return out
}

// used reports whether the placement matters for safety: it wants pods or
// has some.
func used(pl *Placement) bool { return pl.Replicas > 0 || len(pl.Pods) > 0 }

func outdated(pl *Placement, pod *Pod) bool {
	return pl.Revision != "" && !pod.Terminating && pod.Revision != pl.Revision
}

// needed returns the operation the observed state calls for, or "". A
// disconnected member's pods are unknown, not missing: they call for
// nothing until the member is back.
func (p *planner) needed() v1alpha1.OperationType {
	var pods, desired int
	scale, upgrade := false, false
	for ci := range p.Components {
		for pi := range p.Components[ci].Placements {
			pl := &p.Components[ci].Placements[pi]
			if !pl.Connected {
				continue
			}
			pods += len(pl.Pods)
			desired += int(pl.Replicas)
			if len(live(pl)) != int(pl.Replicas) {
				scale = true
			}
			for i := range pl.Pods {
				if outdated(pl, &pl.Pods[i]) {
					upgrade = true
				}
			}
		}
	}
	switch {
	case pods == 0 && desired > 0:
		return v1alpha1.OperationInitialize
	case scale:
		return v1alpha1.OperationScale
	case upgrade:
		return v1alpha1.OperationUpgrade
	}
	return ""
}

func (p *planner) placement(component, member string) *Placement {
	for ci := range p.Components {
		if p.Components[ci].Name != component {
			continue
		}
		for pi := range p.Components[ci].Placements {
			if p.Components[ci].Placements[pi].Member == member {
				return &p.Components[ci].Placements[pi]
			}
		}
	}
	return nil
}

func findPod(pl *Placement, name string) *Pod {
	for i := range pl.Pods {
		if pl.Pods[i].Name == name {
			return &pl.Pods[i]
		}
	}
	return nil
}

// ordinals tracks the ordinals in use in one component across members, so
// that creations take the lowest free one.
type ordinals map[int]bool

func (p *planner) usedOrdinals(c *Component) ordinals {
	used := ordinals{}
	for pi := range c.Placements {
		for _, pod := range c.Placements[pi].Pods {
			used[pod.Ordinal] = true
		}
	}
	return used
}

func (o ordinals) take() int {
	for i := 0; ; i++ {
		if !o[i] {
			o[i] = true
			return i
		}
	}
}

// missing returns creations for up to limit (all when limit < 0) missing
// pods of component c in its connected members, lowest free ordinals first.
func (p *planner) missing(c *Component, limit int) []PodRef {
	var out []PodRef
	free := p.usedOrdinals(c)
	for pi := range c.Placements {
		pl := &c.Placements[pi]
		if !pl.Connected {
			continue
		}
		for n := len(live(pl)); n < int(pl.Replicas); n++ {
			if limit >= 0 && len(out) >= limit {
				return out
			}
			o := free.take()
			out = append(out, PodRef{Component: c.Name, Member: pl.Member, Name: PodName(p.Name, c.Name, o), Ordinal: o, Revision: pl.Revision})
		}
	}
	return out
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
// A deletion is allowed when the federation is fully available, or when the
// victim is itself unavailable (deleting it cannot lower availability) and
// nothing else is under way: no pod terminating, every member connected.
func (p *planner) mayDisrupt(victim *Pod) (string, time.Duration) {
	if p.Paused {
		return "paused: no pod is deleted", 0
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
			if used(pl) && !pl.Connected {
				return fmt.Sprintf("member %s is not connected", pl.Member), 0
			}
			for _, pod := range pl.Pods {
				if pod.Terminating {
					return fmt.Sprintf("pod %s in %s is terminating", pod.Name, pl.Member), 0
				}
			}
		}
	}
	return "", 0
}

func wait(op *v1alpha1.Operation, why string, after time.Duration) Plan {
	return Plan{Operation: op, Message: "waiting: " + why, RequeueAfter: after}
}

// waiting is wait for inFlight, which returns a plan by pointer.
func waiting(op *v1alpha1.Operation, why string, after time.Duration) *Plan {
	plan := wait(op, why, after)
	return &plan
}

func ref(component, member string, pod *Pod) *PodRef {
	return &PodRef{Component: component, Member: member, Name: pod.Name, Ordinal: pod.Ordinal, UID: pod.UID, Revision: pod.Revision}
}

// initialize creates each component's missing pods at once, in spec order,
// and waits for a component to be available before the next.
func (p *planner) initialize(op *v1alpha1.Operation) Plan {
	for ci := range p.Components {
		c := &p.Components[ci]
		op.Component, op.Member, op.Pod, op.PodUID = c.Name, "", "", ""
		if creates := p.missing(c, -1); len(creates) > 0 {
			return Plan{Operation: op, Create: creates, Message: fmt.Sprintf("creating %d pods of component %s", len(creates), c.Name)}
		}
		if why, left := p.blocker(c); why != "" {
			return wait(op, why, left)
		}
	}
	return Plan{Message: "initialized: every component's pods are available"}
}

// inFlight handles the pod named by op.Pod. It returns a plan while the step
// is still under way, or nil (with op.Pod cleared and completed set) when
// the step is done and the next one may be chosen.
func (p *planner) inFlight(op *v1alpha1.Operation, completed *Plan) *Plan {
	if op.Pod == "" {
		return nil
	}
	pl := p.placement(op.Component, op.Member)
	if pl == nil {
		// The topology no longer has this placement: the step is moot.
		op.Pod, op.PodUID = "", ""
		return nil
	}
	pod := findPod(pl, op.Pod)
	removal := op.Type == v1alpha1.OperationScale && op.PodUID != ""
	switch {
	case pod != nil && op.PodUID != "" && pod.UID == op.PodUID:
		// The old instance is still there: its deletion was acknowledged
		// but not yet observed. Repeat it (same UID precondition).
		if pod.Terminating {
			return waiting(op, fmt.Sprintf("pod %s in %s is terminating", pod.Name, pl.Member), 0)
		}
		if !pl.Connected {
			return waiting(op, fmt.Sprintf("member %s is not connected", pl.Member), 0)
		}
		if p.Paused {
			return waiting(op, "paused: no pod is deleted", 0)
		}
		return &Plan{Operation: op, Delete: ref(op.Component, pl.Member, pod), Message: fmt.Sprintf("deleting pod %s in %s", pod.Name, pl.Member)}
	case removal:
		// Scale-in: the old instance is gone.
		*completed = Plan{Completed: &PodRef{Component: op.Component, Member: op.Member, Name: op.Pod, UID: op.PodUID}, CompletedAt: p.Now}
		op.Pod, op.PodUID = "", ""
		return nil
	case pod == nil:
		if op.Type == v1alpha1.OperationScale && len(live(pl)) >= int(pl.Replicas) {
			// Scaled back before the pod was created: nothing to do.
			op.Pod = ""
			return nil
		}
		if !pl.Connected {
			return waiting(op, fmt.Sprintf("member %s is not connected", pl.Member), 0)
		}
		ordinal, _ := ParseOrdinal(p.Name, op.Component, op.Pod)
		op.TargetRevision = pl.Revision
		return &Plan{
			Operation: op,
			Create:    []PodRef{{Component: op.Component, Member: pl.Member, Name: op.Pod, Ordinal: ordinal, Revision: pl.Revision}},
			Message:   fmt.Sprintf("creating pod %s in %s", op.Pod, pl.Member),
		}
	case pod.Terminating:
		return waiting(op, fmt.Sprintf("pod %s in %s is terminating", pod.Name, pl.Member), 0)
	}
	if ok, left := p.available(pod); !ok {
		return waiting(op, fmt.Sprintf("pod %s in %s to become available", pod.Name, pl.Member), left)
	}
	*completed = Plan{Completed: ref(op.Component, pl.Member, pod), CompletedAt: p.availableSince(pod)}
	op.Pod, op.PodUID = "", ""
	return nil
}

// withCompleted copies the completion facts of done into plan.
func withCompleted(plan Plan, done Plan) Plan {
	plan.Completed, plan.CompletedAt = done.Completed, done.CompletedAt
	return plan
}

// scale brings every placement to its replicas, one pod at a time. Missing
// pods come first, created at the lowest free ordinal and each waited for
// until available: capacity is added before any is taken away, so a
// scale-in never waits on a shortfall that only a later scale-out would
// fill. Then surplus pods are deleted, highest ordinal first, each waited
// for until gone.
func (p *planner) scale(op *v1alpha1.Operation) Plan {
	var done Plan
	if plan := p.inFlight(op, &done); plan != nil {
		return *plan
	}
	var unreachable []string
	for ci := range p.Components {
		c := &p.Components[ci]
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			if len(live(pl)) >= int(pl.Replicas) {
				continue
			}
			if !pl.Connected {
				unreachable = append(unreachable, pl.Member)
				continue
			}
			o := p.usedOrdinals(c).take()
			create := PodRef{Component: c.Name, Member: pl.Member, Name: PodName(p.Name, c.Name, o), Ordinal: o, Revision: pl.Revision}
			op.Component, op.Member, op.Pod, op.PodUID, op.TargetRevision = c.Name, pl.Member, create.Name, "", pl.Revision
			return withCompleted(Plan{Operation: op, Create: []PodRef{create},
				Message: fmt.Sprintf("adding pod %s to %s", create.Name, pl.Member)}, done)
		}
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		for pi := range c.Placements {
			pl := &c.Placements[pi]
			pods := live(pl)
			if len(pods) <= int(pl.Replicas) {
				continue
			}
			victim := slices.MaxFunc(pods, func(a, b *Pod) int { return a.Ordinal - b.Ordinal })
			op.Component, op.Member = c.Name, pl.Member
			if why, left := p.mayDisrupt(victim); why != "" {
				return withCompleted(wait(op, why, left), done)
			}
			op.Pod, op.PodUID, op.TargetRevision = victim.Name, victim.UID, ""
			return withCompleted(Plan{Operation: op, Delete: ref(c.Name, pl.Member, victim),
				Message: fmt.Sprintf("removing pod %s from %s", victim.Name, pl.Member)}, done)
		}
	}
	if len(unreachable) > 0 {
		return withCompleted(wait(op, fmt.Sprintf("member %s is not connected", strings.Join(unreachable, ", ")), 0), done)
	}
	return withCompleted(Plan{Message: "scaled: every placement has its replicas"}, done)
}

// upgrade replaces outdated pods one at a time: components in spec order,
// members taking turns in topology order, highest ordinal first. Missing
// pods are created first: the federation must be whole before a pod is
// taken away.
func (p *planner) upgrade(op *v1alpha1.Operation) Plan {
	var done Plan
	if plan := p.inFlight(op, &done); plan != nil {
		return *plan
	}
	var creates []PodRef
	for ci := range p.Components {
		creates = append(creates, p.missing(&p.Components[ci], -1)...)
	}
	if len(creates) > 0 {
		return withCompleted(Plan{Operation: op, Create: creates, Message: fmt.Sprintf("creating %d missing pods", len(creates))}, done)
	}
	for ci := range p.Components {
		c := &p.Components[ci]
		pl, victim := p.nextVictim(c, op)
		if victim == nil {
			continue
		}
		op.Component = c.Name
		if why, left := p.mayDisrupt(victim); why != "" {
			return withCompleted(wait(op, why, left), done)
		}
		op.Member, op.Pod, op.PodUID, op.TargetRevision = pl.Member, victim.Name, victim.UID, pl.Revision
		return withCompleted(Plan{Operation: op, Delete: ref(c.Name, pl.Member, victim),
			Message: fmt.Sprintf("replacing pod %s in %s", victim.Name, pl.Member)}, done)
	}
	if why, left := p.blocker(nil); why != "" {
		// Nothing outdated is left, but the last step's effects are not all
		// available yet (a missing pod in a disconnected member, say).
		return withCompleted(wait(op, why, left), done)
	}
	return withCompleted(Plan{Message: "upgraded: every pod is at its update revision"}, done)
}

// nextVictim picks component c's next outdated pod. Members take turns in
// topology order, starting after op.Member when the previous step was in
// this component; within a member, the highest ordinal goes first. An
// outdated pod that is already unavailable goes before the others: replacing
// it costs no availability.
func (p *planner) nextVictim(c *Component, op *v1alpha1.Operation) (*Placement, *Pod) {
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
		var best *Pod
		for i := range pl.Pods {
			pod := &pl.Pods[i]
			if !outdated(pl, pod) {
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
