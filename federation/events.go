package federation

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/member"
)

// Event reasons fedop records on FederationClusters, as named constants
// (the sample-controller's habit): users filter on them, so they are part
// of the API.
const (
	// EventOperationStarted: an operation took the mutex.
	EventOperationStarted = "OperationStarted"
	// EventOperationCompleted: an operation released the mutex.
	EventOperationCompleted = "OperationCompleted"
	// EventPodReplaced: an upgrade step ended, its pod available again at
	// the update revision.
	EventPodReplaced = "PodReplaced"
	// EventPodAdded: a scale-out step ended, its pod available.
	EventPodAdded = "PodAdded"
	// EventPodRemoved: a scale-in step ended, its pod gone.
	EventPodRemoved = "PodRemoved"
	// EventMemberDisconnected: a member the FederationCluster uses is not
	// connected (Warning).
	EventMemberDisconnected = "MemberDisconnected"
	// EventMemberConnected: such a member is connected again.
	EventMemberConnected = "MemberConnected"
	// EventCleanupSkipped: the FederationCluster was deleted with objects
	// left in an unreachable member (Warning).
	EventCleanupSkipped = "CleanupSkipped"
	// EventPodNameTaken: a pod fedop would create exists in its member
	// and is not fedop's; fedop does not adopt it (Warning).
	EventPodNameTaken = "PodNameTaken"
)

// recordTransitions records events for what this reconcile changed, after
// its status write succeeded: an operation started or completed, a step
// completed, a member disconnected or reconnected.
func (r *Reconciler) recordTransitions(fc *v1alpha1.FederationCluster, before *v1alpha1.FederationClusterStatus, plan rollout.Plan, obs *observation) {
	prev, next := before.Operation, plan.Operation
	if c := plan.Completed; c != nil && prev != nil {
		switch {
		case prev.Type == v1alpha1.OperationUpgrade:
			r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventPodReplaced, "Upgrade", "Pod %s in member %s replaced at revision %s", c.Name, c.Member, c.Revision)
		case prev.PodUID != "":
			r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventPodRemoved, "Scale", "Pod %s removed from member %s", c.Name, c.Member)
		default:
			r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventPodAdded, "Scale", "Pod %s added to member %s", c.Name, c.Member)
		}
	}
	switch {
	case prev == nil && next != nil:
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventOperationStarted, string(next.Type), "%s started: %s", next.Type, plan.Message)
	case prev != nil && next == nil:
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventOperationCompleted, string(prev.Type), "%s completed: %s", prev.Type, plan.Message)
	case prev != nil && next != nil && prev.Type != next.Type:
		// One reconcile ended an operation and took the next.
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventOperationCompleted, string(prev.Type), "%s completed", prev.Type)
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventOperationStarted, string(next.Type), "%s started: %s", next.Type, plan.Message)
	}
	was := map[string]bool{}
	for _, m := range before.Members {
		was[m.Name] = m.Connected
	}
	for name, mv := range obs.members {
		connected, known := was[name]
		switch {
		case mv.cluster == nil && (connected || !known) && mv.state.Reason != member.ReasonConnecting:
			r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventMemberDisconnected, "Observe", "Member cluster %s is not connected: %s", name, memberMessage(mv.state))
		case mv.cluster != nil && known && !connected:
			r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventMemberConnected, "Observe", "Member cluster %s is connected", name)
		}
	}
}
