package federation

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// PlannerState returns the planner's input (rollout.State) for fc as a
// client outside the manager sees it: fc's spec and status, and pods, the
// pods found in each member cluster by member name (fedop's pods of fc,
// as listed with fc's instance label; others are ignored). A member
// absent from pods is out of sight: not connected, its pods unknown. A
// member present counts as connected and fresh.
//
// It is what the reconciler's observe builds, without what only the
// manager knows: expectations of pods its cache does not show yet, and
// the claims (so no Expand step is planned and no retained ordinal is
// taken back). The error is Revision's, for a template that does not
// encode.
func PlannerState(fc *v1alpha1.FederationCluster, pods map[string][]corev1.Pod, now time.Time) (rollout.State, error) {
	rec := readRecord(fc)
	s := rollout.State{
		Name:             fc.Name,
		Operation:        fc.Status.Operation.DeepCopy(),
		Paused:           fc.Spec.Paused,
		MinReady:         time.Duration(fc.Spec.MinReadySeconds) * time.Second,
		OrdinalsRecorded: rec.complete,
		Release:          releaseRequested(fc),
		ReleaseNames:     releaseNames(fc),
		Now:              now,
	}
	if d := fc.Spec.ProgressDeadlineSeconds; d != nil {
		s.ProgressDeadline = time.Duration(*d) * time.Second
	}
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		rc := rollout.Component{Name: c.Name, Hooks: hooksOf(c)}
		if n := rec.next[c.Name]; n != nil {
			rc.NextOrdinal = int(*n)
		}
		named := map[string]bool{}
		for j := range c.Topology {
			p := &c.Topology[j]
			named[p.Member] = true
			rev, err := Revision(EffectiveTemplate(c, p))
			if err != nil {
				return rollout.State{}, err
			}
			rc.Placements = append(rc.Placements, placementOf(fc, c, p.Member, p.Replicas, rev, rec, pods))
		}
		// Members the component no longer names but status records or
		// pods are seen in: drained, with no desired replicas.
		var others []string
		for m := range rec.ordinals[c.Name] {
			others = append(others, m)
		}
		for m, list := range pods {
			for k := range list {
				if list[k].Labels[v1alpha1.LabelComponent] == c.Name {
					others = append(others, m)
				}
			}
		}
		slices.Sort(others)
		for _, m := range slices.Compact(others) {
			if named[m] {
				continue
			}
			pl := placementOf(fc, c, m, 0, "", rec, pods)
			if pl.Connected && len(pl.Pods) == 0 && len(pl.Ordinals) == 0 {
				continue
			}
			if !pl.Connected {
				continue // out of sight and not wanted: forgotten
			}
			rc.Placements = append(rc.Placements, pl)
		}
		s.Components = append(s.Components, rc)
	}
	return s, nil
}

// placementOf is one placement of component c in member m for
// PlannerState.
func placementOf(fc *v1alpha1.FederationCluster, c *v1alpha1.Component, m string, replicas int32, rev string,
	rec record, pods map[string][]corev1.Pod) rollout.Placement {
	list, seen := pods[m]
	pl := rollout.Placement{
		Member:    m,
		Replicas:  replicas,
		Revision:  rev,
		Connected: seen,
		Fresh:     seen,
		Ordinals:  rec.ordinals[c.Name][m],
		Partition: partitionOf(c),
	}
	for i := range list {
		pod := &list[i]
		if pod.Labels[v1alpha1.LabelComponent] != c.Name || pod.Labels[v1alpha1.LabelMember] != m || pod.Labels[v1alpha1.LabelInstance] != fc.Name {
			continue
		}
		if rpod, ok := plannerPod(fc.Name, c.Name, pod); ok {
			pl.Pods = append(pl.Pods, rpod)
		}
	}
	return pl
}

// Step is one action of a Preview: what fedop would do, in order.
type Step struct {
	// Operation is the operation the step belongs to (status.operation's
	// type): Initialize, Scale, Upgrade or Expand.
	Operation v1alpha1.OperationType `json:"operation"`
	// Action is Create, Delete (the step's one disruption), Replace (a
	// failed pod, deleted to come back), Drain (the preDelete hook) or
	// Check (the postReady gate).
	Action string `json:"action"`
	// Component, Member and Pod name the pod acted on.
	Component string `json:"component"`
	Member    string `json:"member"`
	Pod       string `json:"pod"`
	// Revision is the revision a created pod gets; for a deletion in an
	// upgrade, the revision its replacement gets.
	Revision string `json:"revision,omitempty"`
}

// Actions of a Step.
const (
	ActionCreate  = "Create"
	ActionDelete  = "Delete"
	ActionReplace = "Replace"
	ActionDrain   = "Drain"
	ActionCheck   = "Check"
)

// Preview runs the planner (rollout.Next) from s on a model where every
// action succeeds at once: a created pod is Ready at its revision, a
// deleted pod is gone, every hook answers 2xx, and minReadySeconds passes
// between observations. It returns the steps in order, at most maxSteps,
// and the message of the plan it stopped at: the one that has nothing
// left to do, or one that waits on something the model cannot change (a
// member out of sight, a paused FederationCluster, a pod fedop did not
// create). It never changes s's slices: they are cloned first.
func Preview(s rollout.State, maxSteps int) ([]Step, string) {
	s = cloneState(s)
	var steps []Step
	uid := 0
	var last string
	idle := 0
	for range 4*maxSteps + 16 {
		plan := rollout.Next(s)
		last = plan.Message
		// A status write is an event: a plan that only changes the
		// operation (a stage acknowledged) is followed by another.
		progressed := !equality.Semantic.DeepEqual(s.Operation, plan.Operation)
		s.Operation = plan.Operation
		for _, co := range plan.Ordinals {
			recordOrdinals(&s, co)
		}
		opType := v1alpha1.OperationType("")
		if plan.Operation != nil {
			opType = plan.Operation.Type
		}
		acted := false
		add := func(action string, ref rollout.PodRef, rev string) {
			acted = true
			steps = append(steps, Step{Operation: opType, Action: action, Component: ref.Component, Member: ref.Member, Pod: ref.Name, Revision: rev})
		}
		s.Calls = rollout.Calls{}
		if plan.Drain != nil {
			add(ActionDrain, *plan.Drain, "")
			s.Calls.Drained = true
		}
		if plan.Undo != nil {
			s.Calls.Undone = true
			acted = true
		}
		for _, ref := range plan.Check {
			if s.Calls.Health == nil {
				s.Calls.Health = map[string]string{}
			}
			s.Calls.Health[ref.Member+"/"+ref.Name] = ""
		}
		if len(plan.Check) > 0 && len(steps) > 0 && steps[len(steps)-1].Action != ActionCheck {
			add(ActionCheck, plan.Check[0], "")
		}
		for _, ref := range plan.Replace {
			add(ActionReplace, ref, "")
			removePod(&s, ref)
		}
		if ref := plan.Delete; ref != nil {
			rev := ""
			if opType == v1alpha1.OperationUpgrade && plan.Operation != nil {
				rev = plan.Operation.TargetRevision
			}
			add(ActionDelete, *ref, rev)
			removePod(&s, *ref)
		}
		for _, ref := range plan.Create {
			add(ActionCreate, ref, ref.Revision)
			uid++
			addPod(&s, ref, types.UID(fmt.Sprintf("preview-%d", uid)))
		}
		if len(steps) >= maxSteps {
			return steps[:maxSteps], last
		}
		if acted || progressed || len(plan.Check) > 0 {
			idle = 0
		} else if idle++; plan.RequeueAfter == 0 || idle > 2 {
			// Nothing the model can change: done, or waiting on the
			// world (a member out of sight, paused, a foreign pod).
			return steps, last
		}
		s.Now = s.Now.Add(s.MinReady + max(plan.RequeueAfter, time.Second))
	}
	return steps, last
}

// cloneState copies the parts of s Preview changes.
func cloneState(s rollout.State) rollout.State {
	s.Operation = s.Operation.DeepCopy()
	s.Components = slices.Clone(s.Components)
	for i := range s.Components {
		s.Components[i].Placements = slices.Clone(s.Components[i].Placements)
		for j := range s.Components[i].Placements {
			pl := &s.Components[i].Placements[j]
			pl.Pods = slices.Clone(pl.Pods)
			pl.Ordinals = slices.Clone(pl.Ordinals)
		}
	}
	return s
}

func placementIn(s *rollout.State, component, member string) *rollout.Placement {
	for i := range s.Components {
		if s.Components[i].Name != component {
			continue
		}
		for j := range s.Components[i].Placements {
			if s.Components[i].Placements[j].Member == member {
				return &s.Components[i].Placements[j]
			}
		}
	}
	return nil
}

func removePod(s *rollout.State, ref rollout.PodRef) {
	if pl := placementIn(s, ref.Component, ref.Member); pl != nil {
		pl.Pods = slices.DeleteFunc(pl.Pods, func(p rollout.Pod) bool { return p.Name == ref.Name })
	}
}

func addPod(s *rollout.State, ref rollout.PodRef, uid types.UID) {
	pl := placementIn(s, ref.Component, ref.Member)
	if pl == nil || slices.ContainsFunc(pl.Pods, func(p rollout.Pod) bool { return p.Name == ref.Name }) {
		return
	}
	pl.Pods = append(pl.Pods, rollout.Pod{Name: ref.Name, UID: uid, Ordinal: ref.Ordinal, Revision: ref.Revision, Ready: true, ReadySince: s.Now, Created: s.Now})
}

func recordOrdinals(s *rollout.State, co rollout.ComponentOrdinals) {
	for i := range s.Components {
		c := &s.Components[i]
		if c.Name != co.Component {
			continue
		}
		c.NextOrdinal = co.NextOrdinal
		for j := range c.Placements {
			c.Placements[j].Ordinals = slices.Clone(co.Placements[c.Placements[j].Member])
		}
	}
	s.OrdinalsRecorded = true
}
