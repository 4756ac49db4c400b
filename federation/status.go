package federation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/member"
)

// computeStatus returns fc's status from what was observed and planned. It
// is a plain function of its inputs: members holds what the registry said
// of every member this reconcile observed (Connected and Fresh only when it
// could read its cache), state is the planner's input and plan its output.
// The reconciler writes the result once, before acting (acknowledge, then
// act). The operation is the plan's, with holder set to the writing
// manager; the ordinals are the plan's, recorded before any pod takes one.
//
// Status stays within its bounds whatever the spec: at most
// MaxStatusComponents components and MaxStatusPlacements placements each,
// the spec's first and then those being drained.
func computeStatus(
	fc *v1alpha1.FederationCluster, members map[string]member.State, state rollout.State, plan rollout.Plan, holder string,
) v1alpha1.FederationClusterStatus {
	st := v1alpha1.FederationClusterStatus{
		ObservedGeneration: fc.Generation,
		Conditions:         slices.Clone(fc.Status.Conditions),
	}
	if plan.Operation != nil {
		st.Operation = plan.Operation.DeepCopy()
		st.Operation.Holder = holder
	}

	var missing, disconnected []string
	for _, name := range slices.Sorted(maps.Keys(members)) {
		ms := memberStatus(name, members[name])
		if !ms.Connected {
			if members[name].Registered {
				disconnected = append(disconnected, name)
			} else {
				missing = append(missing, name)
			}
		}
		st.Members = append(st.Members, ms)
	}
	st.Members = st.Members[:min(len(st.Members), maxStatusMembers)]
	st.ConnectedMembers = fmt.Sprintf("%d/%d", len(members)-len(missing)-len(disconnected), len(members))

	ordinals := map[string]rollout.ComponentOrdinals{}
	for _, co := range plan.Ordinals {
		ordinals[co.Component] = co
	}
	unknown := false
	heldBack := 0
	var silent []string
	for _, rc := range state.Components {
		cs := v1alpha1.ComponentStatus{Name: rc.Name}
		co, recorded := ordinals[rc.Name]
		if recorded {
			cs.NextOrdinal = ptr.To(int32(co.NextOrdinal))
		}
		desired, blind := false, false
		held := map[string]int{}
		for _, rp := range rc.Placements {
			ps, h := placementStatus(rp)
			held[rp.Member] = h
			heldBack += h
			ps.Ordinals = rollout.FormatOrdinals(co.Placements[rp.Member])
			if rp.Revision != "" {
				desired = true
			}
			if rp.Revision == "" && len(rp.Pods) == 0 && rp.Connected && ps.Ordinals == "" {
				continue // drained: forget the member
			}
			if !rp.Connected && (ps.Replicas > 0 || len(rp.Pods) > 0) {
				blind = true
			}
			if rp.Connected && !rp.Fresh && (ps.Replicas > 0 || len(rp.Pods) > 0) && !slices.Contains(silent, rp.Member) {
				silent = append(silent, rp.Member)
			}
			cs.Replicas += ps.Replicas
			cs.ReadyReplicas += ps.ReadyReplicas
			cs.UpdatedReplicas += ps.UpdatedReplicas
			if len(cs.Members) < v1alpha1.MaxStatusPlacements {
				cs.Members = append(cs.Members, ps)
			}
		}
		if !desired && len(cs.Members) == 0 {
			continue // a dropped component, drained
		}
		cs.Rollout = rolloutPhase(cs, blind, held)
		unknown = unknown || blind
		st.Replicas += cs.Replicas
		st.ReadyReplicas += cs.ReadyReplicas
		st.UpdatedReplicas += cs.UpdatedReplicas
		if len(st.Components) < v1alpha1.MaxStatusComponents {
			st.Components = append(st.Components, cs)
		}
	}
	slices.Sort(silent)

	setCondition(&st, fc.Generation, state.Now, membersConnected(missing, disconnected))
	setCondition(&st, fc.Generation, state.Now, ready(st, missing, disconnected, plan))
	setCondition(&st, fc.Generation, state.Now, progressing(fc.Spec.Paused, st, heldBack, plan, unknown, silent, pendingClaims(state, plan.Stuck)))
	if hasClaimTemplates(fc) {
		setCondition(&st, fc.Generation, state.Now, storageExpanded(state, plan))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStorageExpanded)
	}
	return st
}

func hasClaimTemplates(fc *v1alpha1.FederationCluster) bool {
	for _, c := range fc.Spec.Components {
		if len(c.VolumeClaimTemplates) > 0 {
			return true
		}
	}
	return false
}

// pendingClaims returns the claims of the stuck pod (if any) that are not
// Bound.
func pendingClaims(state rollout.State, stuck *rollout.PodRef) []string {
	if stuck == nil {
		return nil
	}
	var out []string
	for _, rc := range state.Components {
		for _, rp := range rc.Placements {
			if rc.Name != stuck.Component || rp.Member != stuck.Member {
				continue
			}
			for _, pod := range rp.Pods {
				if pod.Name != stuck.Name {
					continue
				}
				for _, c := range pod.Claims {
					if c.Pending {
						out = append(out, c.Name)
					}
				}
			}
		}
	}
	return out
}

// storageExpanded derives StorageExpanded: False while claims grow or
// when some cannot, True otherwise.
func storageExpanded(state rollout.State, plan rollout.Plan) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionStorageExpanded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonExpanded,
		Message: "every claim has its template's size"}
	growing := plan.Operation != nil && plan.Operation.Type == v1alpha1.OperationExpand
	for _, rc := range state.Components {
		for _, rp := range rc.Placements {
			for _, pod := range rp.Pods {
				for _, cl := range pod.Claims {
					growing = growing || cl.Requested > cl.Capacity || (cl.Desired > cl.Requested && cl.Expandable)
				}
			}
		}
	}
	switch {
	case len(plan.Unexpandable) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonExpansionUnsupported
		c.Message = fmt.Sprintf("the StorageClass of claim %s does not allow volume expansion: they keep their size, and fedop deletes no claim to resize it",
			strings.Join(plan.Unexpandable, ", "))
	case growing:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonExpanding, "claims are growing to their template's size, one pod at a time"
	}
	if len(c.Message) > 32768 {
		c.Message = c.Message[:32765] + "..."
	}
	return c
}

// maxStatusMembers is status.members' bound (its MaxItems).
const maxStatusMembers = 512

// memberStatus is what status says of member name, given its state.
func memberStatus(name string, s member.State) v1alpha1.MemberStatus {
	ms := v1alpha1.MemberStatus{Name: name, Connected: s.Connected}
	if !s.LastProbeTime.IsZero() {
		t := rollout.Stamp(s.LastProbeTime)
		ms.LastProbeTime = &t
	}
	if !ms.Connected {
		ms.Message = memberMessage(s)
	}
	return ms
}

func memberMessage(s member.State) string {
	msg := s.Message
	if msg == "" && s.Reason != "" {
		msg = s.Reason
	}
	if msg == "" {
		msg = "not connected"
	}
	if len(msg) > 1024 {
		msg = msg[:1021] + "..."
	}
	return msg
}

// placementStatus counts one placement's pods. A terminating pod counts as
// neither ready nor updated: it is on its way out. So does a pod the cache
// does not show yet (an expectation: no UID). held counts the pods the
// component's partition keeps at another revision.
func placementStatus(rp rollout.Placement) (ps v1alpha1.PlacementStatus, held int) {
	ps = v1alpha1.PlacementStatus{Member: rp.Member, Replicas: rp.Replicas, UpdateRevision: rp.Revision}
	outdated := map[string]int{}
	for _, p := range rp.Pods {
		if p.Terminating || p.UID == "" {
			continue // on its way out, or only expected
		}
		if p.Ready {
			ps.ReadyReplicas++
		}
		for _, c := range p.Claims {
			if !c.Pending {
				ps.BoundClaims++
			}
		}
		if rp.Revision != "" && p.Revision == rp.Revision {
			ps.UpdatedReplicas++
		} else {
			outdated[p.Revision]++
			if p.Ordinal < rp.Partition {
				held++
			}
		}
	}
	ps.CurrentRevision = rp.Revision
	best := 0
	for rev, n := range outdated {
		if n > best || (n == best && rev < ps.CurrentRevision) {
			ps.CurrentRevision, best = rev, n
		}
	}
	return ps, held
}

// rolloutPhase derives a component's phase from its revisions, as the
// StatefulSet controller derives rollout progress from currentRevision and
// updateRevision. The status it goes into is computed from the current
// generation, so "generation not yet observed" shows as observedGeneration
// lagging metadata.generation; here Unknown means a member of the
// component cannot be observed. Done when every desired pod exists at its
// update revision, or below the partition (held, per member: as a
// StatefulSet's partitioned rollout, Done when every pod at or above the
// partition is updated); NotStarted when pods are outdated and none is
// updated yet; InProgress otherwise.
func rolloutPhase(cs v1alpha1.ComponentStatus, unknown bool, held map[string]int) v1alpha1.RolloutPhase {
	if unknown {
		return v1alpha1.RolloutUnknown
	}
	current := true
	for _, m := range cs.Members {
		h := held[m.Member]
		if (h == 0 && m.CurrentRevision != m.UpdateRevision) || m.UpdatedReplicas+int32(h) != m.Replicas {
			current = false
		}
	}
	switch {
	case current:
		return v1alpha1.RolloutDone
	case cs.UpdatedReplicas == 0:
		return v1alpha1.RolloutNotStarted
	default:
		return v1alpha1.RolloutInProgress
	}
}

// setCondition sets c in st's conditions for generation. A condition whose
// status changes (or is new) takes transition time now, from the
// reconciler's clock (meta.SetStatusCondition would read the wall clock).
func setCondition(st *v1alpha1.FederationClusterStatus, generation int64, now time.Time, c metav1.Condition) {
	c.ObservedGeneration = generation
	c.LastTransitionTime = rollout.Stamp(now)
	meta.SetStatusCondition(&st.Conditions, c)
}

func membersConnected(missing, disconnected []string) metav1.Condition {
	switch {
	case len(missing) > 0:
		return metav1.Condition{Type: v1alpha1.ConditionMembersConnected, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMemberNotFound,
			Message: fmt.Sprintf("no registered member cluster (Secret) named %s", strings.Join(missing, ", "))}
	case len(disconnected) > 0:
		return metav1.Condition{Type: v1alpha1.ConditionMembersConnected, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMemberDisconnected,
			Message: fmt.Sprintf("member cluster %s is not connected", strings.Join(disconnected, ", "))}
	}
	return metav1.Condition{Type: v1alpha1.ConditionMembersConnected, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConnected,
		Message: "every member cluster is connected"}
}

func ready(st v1alpha1.FederationClusterStatus, missing, disconnected []string, plan rollout.Plan) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}
	switch {
	case len(missing) > 0:
		c.Reason, c.Message = v1alpha1.ReasonMemberNotFound, fmt.Sprintf("no registered member cluster (Secret) named %s", strings.Join(missing, ", "))
	case len(disconnected) > 0:
		c.Reason, c.Message = v1alpha1.ReasonMemberDisconnected, fmt.Sprintf("member cluster %s is not connected", strings.Join(disconnected, ", "))
	case plan.Operation != nil && plan.Operation.Type == v1alpha1.OperationInitialize:
		c.Reason, c.Message = v1alpha1.ReasonInitializing, plan.Message
	case st.ReadyReplicas < st.Replicas:
		c.Reason, c.Message = v1alpha1.ReasonPodsUnavailable, fmt.Sprintf("%d of %d pods are ready", st.ReadyReplicas, st.Replicas)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonAvailable, fmt.Sprintf("%d of %d pods are ready", st.ReadyReplicas, st.Replicas)
	}
	return c
}

// progressing derives the Progressing condition from the plan and from the
// same facts as the rollout phases: Complete only when no operation is
// held, every component's rollout is Done and every desired pod is updated.
// When the planner holds no operation but those facts say otherwise, the
// reason is a member fedop cannot see (Unknown: whether the rollout is done
// cannot be told) or, were the planner ever to stop short, Waiting, never
// Complete.
func progressing(
	paused bool, st v1alpha1.FederationClusterStatus, heldBack int, plan rollout.Plan, unknown bool, silent, pendingClaims []string,
) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Message: plan.Message}
	waiting := plan.Delete == nil && len(plan.Create) == 0
	switch {
	case plan.Hook == v1alpha1.ReasonHookTimedOut:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonHookTimedOut
	case plan.Hook != "":
		c.Reason = plan.Hook
	case plan.Stuck != nil && len(pendingClaims) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonClaimPending
		c.Message = fmt.Sprintf("pod %s in member %s has not been available for %s, longer than spec.progressDeadlineSeconds: "+
			"its claim %s in member %s is not Bound; %s",
			plan.Stuck.Name, plan.Stuck.Member, plan.StuckFor.Round(time.Second), strings.Join(pendingClaims, ", "), plan.Stuck.Member, plan.Message)
	case plan.Stuck != nil:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded
		c.Message = fmt.Sprintf("pod %s in member %s has not been available for %s, longer than spec.progressDeadlineSeconds: "+
			"no pod is deleted while it is down; fix what keeps it down, or change the spec (a new revision replaces it at once); %s",
			plan.Stuck.Name, plan.Stuck.Member, plan.StuckFor.Round(time.Second), plan.Message)
	case plan.Operation == nil && len(plan.Replace) > 0:
		c.Reason = v1alpha1.ReasonReplacingFailedPods
	case plan.Operation == nil && unknown:
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonMemberDisconnected
		c.Message = "whether every pod is at its update revision cannot be told while a member cluster is not connected"
	case plan.Operation == nil && !rolledOut(st, heldBack):
		c.Reason = v1alpha1.ReasonWaiting
	case plan.Operation == nil:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonComplete
	case paused && waiting:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonPaused
	case waiting && unknown:
		// A member hosting pods of the federation is not connected: the
		// operation waits for it (the plan's message names it).
		c.Reason = v1alpha1.ReasonMemberDisconnected
	case waiting && len(silent) > 0:
		c.Reason = v1alpha1.ReasonMemberSilent
		c.Message = fmt.Sprintf("no pod is deleted until member cluster %s answers; %s", strings.Join(silent, ", "), plan.Message)
	default:
		c.Reason = map[v1alpha1.OperationType]string{
			v1alpha1.OperationInitialize: v1alpha1.ReasonInitializing,
			v1alpha1.OperationScale:      v1alpha1.ReasonScaling,
			v1alpha1.OperationUpgrade:    v1alpha1.ReasonUpgrading,
			v1alpha1.OperationExpand:     v1alpha1.ReasonExpanding,
		}[plan.Operation.Type]
	}
	if len(c.Message) > 32768 {
		c.Message = c.Message[:32765] + "..."
	}
	return c
}

// rolledOut reports whether st describes a finished rollout: every
// component Done and every desired pod at its update revision, but the
// heldBack pods that partitions keep at another.
func rolledOut(st v1alpha1.FederationClusterStatus, heldBack int) bool {
	for _, cs := range st.Components {
		if cs.Rollout != v1alpha1.RolloutDone {
			return false
		}
	}
	return st.UpdatedReplicas+int32(heldBack) == st.Replicas
}

// reportIssues turns Progressing into a report of what the last act could
// not do: pods fedop could not create because another pod holds the name
// (reason PodNameTaken), or member writes that failed (reason
// MemberWriteFailed). Progressing stays True: the operation goes on around
// them, and the writes are retried.
func reportIssues(st *v1alpha1.FederationClusterStatus, generation int64, now time.Time, issues actIssues) {
	var reason, msg string
	switch {
	case len(issues.taken) > 0:
		reason = v1alpha1.ReasonPodNameTaken
		msg = strings.Join(issues.taken, "; ") + ": fedop does not adopt a pod it did not create; delete or rename it"
	case len(issues.failed) > 0:
		reason = v1alpha1.ReasonMemberWriteFailed
		msg = "retrying: " + strings.Join(issues.failed, "; ")
	default:
		return
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c != nil && c.Message != "" {
		msg += "; " + c.Message
	}
	if len(msg) > 32768 {
		msg = msg[:32765] + "..."
	}
	setCondition(st, generation, now, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
}
