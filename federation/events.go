package federation

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

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
	// EventFailedPodReplaced: a pod in phase Failed or Succeeded was
	// deleted, to come back under its name.
	EventFailedPodReplaced = "FailedPodReplaced"
	// EventStepDropped: the step status.operation recorded was not taken:
	// it no longer passed the checks of a new step.
	EventStepDropped = "StepDropped"
	// EventOperationReleased: a user released the operation with the
	// fedop.io/release-operation annotation.
	EventOperationReleased = "OperationReleased"
	// EventProgressDeadlineExceeded: a pod has not been available for
	// longer than spec.progressDeadlineSeconds (Warning).
	EventProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// EventPodDraining: the preDelete hook of a pod is being called (the
	// step entered stage Draining). EventPodDrained: it answered 2xx.
	EventPodDraining = "PodDraining"
	EventPodDrained  = "PodDrained"
	// EventHookFailed: a hook call has failed more than a few times in a
	// row; it is retried with backoff (Warning).
	EventHookFailed = "HookFailed"
	// EventHookTimedOut: a hook has not succeeded within its
	// timeoutSeconds: fedop halts, or (preDelete, onTimeout Proceed)
	// deletes the pod anyway (Warning).
	EventHookTimedOut = "HookTimedOut"
	// EventStepUndone: a called-off step's undo answered 2xx.
	EventStepUndone = "StepUndone"
	// EventHealthCheckFailed: a component's postReady gate started to fail
	// on a pod before a deletion, which waits (Warning).
	EventHealthCheckFailed = "HealthCheckFailed"
	// EventClaimPending: a pod has not been available for longer than
	// spec.progressDeadlineSeconds and a claim it mounts is not Bound
	// (Warning); the Event names the claims and their member.
	EventClaimPending = "ClaimPending"
	// EventMemberForgotten: a member that no placement names and that
	// cannot be seen left status; the Event names the pods fedop last knew
	// there (Warning).
	EventMemberForgotten = "MemberForgotten"
)

// recordTransitions records events for what this reconcile changed, after
// its status write succeeded: an operation started, completed or released,
// a step completed or dropped, a pod stuck past the progress deadline
// (naming its claims that are not Bound, pending), a member disconnected,
// reconnected or forgotten.
func (r *Reconciler) recordTransitions(
	fc *v1alpha1.FederationCluster, before *v1alpha1.FederationClusterStatus, plan rollout.Plan, obs *observation, pending []string,
) {
	prev, next := before.Operation, plan.Operation
	if plan.Released && prev != nil {
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventOperationReleased, string(prev.Type),
			"%s started %s released at the request of %s (annotation %s); planning again",
			prev.Type, prev.StartedTime.UTC().Format(time.RFC3339), releaseRequester(fc), v1alpha1.AnnotationReleaseOperation)
		prev = nil
	}
	if plan.Dropped != "" {
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventStepDropped, "Plan", "%s", plan.Dropped)
	}
	r.recordStuck(fc, before, plan, pending)
	for _, f := range obs.forgotten {
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventMemberForgotten, "Observe",
			"Member cluster %s is in no topology and cannot be reached; fedop no longer waits for it. "+
				"Pods last known there: %s. If it comes back, they are removed", f.member, strings.Join(f.pods, ", "))
	}
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
			r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventMemberDisconnected, "Observe",
				"Member cluster %s is not connected: %s", name, memberMessage(mv.state))
		case mv.cluster != nil && known && !connected:
			r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventMemberConnected, "Observe", "Member cluster %s is connected", name)
		}
	}
}

// recordStuck records, once per stuck pod, that plan.Stuck has not been
// available past spec.progressDeadlineSeconds: ClaimPending naming its
// claims that are not Bound (pending), else ProgressDeadlineExceeded.
func (r *Reconciler) recordStuck(fc *v1alpha1.FederationCluster, before *v1alpha1.FederationClusterStatus, plan rollout.Plan, pending []string) {
	s := plan.Stuck
	if s == nil {
		return
	}
	c := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionProgressing)
	reported := c != nil && (c.Reason == v1alpha1.ReasonProgressDeadlineExceeded || c.Reason == v1alpha1.ReasonClaimPending)
	switch {
	case len(pending) > 0 && (c == nil || c.Reason != v1alpha1.ReasonClaimPending):
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventClaimPending, "Observe",
			"Pod %s in member %s has not been available for %s, longer than spec.progressDeadlineSeconds: its claim %s in member %s is not Bound",
			s.Name, s.Member, plan.StuckFor.Round(time.Second), strings.Join(pending, ", "), s.Member)
	case len(pending) == 0 && !reported:
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventProgressDeadlineExceeded, "Observe",
			"Pod %s in member %s has not been available for %s, longer than spec.progressDeadlineSeconds", s.Name, s.Member, plan.StuckFor.Round(time.Second))
	}
}

// recordHooks records the Events of this reconcile's hooks: a pod entering
// Draining and drained, a called-off step undone, a hook failing more than
// a few times in a row, a timeout, a postReady gate that started to fail.
func (r *Reconciler) recordHooks(fc *v1alpha1.FederationCluster, before *v1alpha1.FederationClusterStatus, plan rollout.Plan, out hookOutcome) {
	draining := plan.Operation != nil && plan.Operation.Stage == v1alpha1.StageDraining && plan.Drain != nil
	if draining && !recordedStage(before.Operation, v1alpha1.StageDraining, plan.Drain) {
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventPodDraining, "Drain",
			"Calling the preDelete hook of pod %s in member %s before deleting it", plan.Drain.Name, plan.Drain.Member)
	}
	if d := out.drained; d != nil {
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventPodDrained, "Drain", "The preDelete hook of pod %s in member %s answered", d.Name, d.Member)
	}
	if u := plan.Undone; u != nil {
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventStepUndone, "Undo",
			"The undo of pod %s in member %s answered: its called-off step is dropped", u.Name, u.Member)
	}
	if out.failedOn != nil && out.failures >= hookFailureEvents {
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventHookFailed, "Hook",
			"The %s hook of pod %s in member %s failed %d times in a row: %s", out.failed, out.failedOn.Name, out.failedOn.Member, out.failures, plan.Message)
	}
	prev := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionProgressing)
	was := func(reason string) bool { return prev != nil && prev.Reason == reason }
	switch {
	case plan.Proceeded && plan.Delete != nil:
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventHookTimedOut, "Delete",
			"The preDelete hook of pod %s in member %s did not succeed in time; deleting it anyway (onTimeout Proceed)", plan.Delete.Name, plan.Delete.Member)
	case plan.Hook == v1alpha1.ReasonHookTimedOut && !was(v1alpha1.ReasonHookTimedOut):
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventHookTimedOut, "Halt", "%s", plan.Message)
	case plan.Hook == v1alpha1.ReasonHealthCheckFailed && !was(v1alpha1.ReasonHealthCheckFailed):
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventHealthCheckFailed, "Gate", "%s", plan.Message)
	}
}
