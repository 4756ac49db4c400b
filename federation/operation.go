package federation

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// This file holds the status-flag mutex: status.operation names the
// operation in progress (Initialize, Scale or Upgrade) and, during a
// step, the pod being acted on. The planner decides what it must hold;
// this file takes, stamps, releases and judges it. Every change of it is a
// status write that carries the resourceVersion the reconcile read, so two
// managers (or one manager and a stale cache) can never both act on one
// reading: the API server rejects the second write with a conflict, the
// optimistic concurrency of the Kubernetes API conventions. Because it
// lives in status, an operation survives restarts of the manager.

// conflictRequeue is how soon a reconcile that lost a resourceVersion race
// runs again. The winner's write produces a watch event too; this only
// guarantees progress if that event is filtered out (a status-only write).
const conflictRequeue = 200 * time.Millisecond

// stageRequeue is how soon a reconcile that recorded a stage whose hook is
// called once status records it (Draining, Verifying, Undoing) runs again
// to call it: fedop's own status writes pass no predicate.
const stageRequeue = 20 * time.Millisecond

// acknowledge writes status over fc's: "acknowledge, then actuate, then
// record" of the Kubernetes API conventions. status carries the operation
// the plan holds, stamped with this manager as holder (computeStatus), so
// this one write takes the mutex (nil to an operation), names the pod of
// the next step before any member is touched, or releases it (an operation
// to nil). The write is an update with fc's resourceVersion as
// precondition.
//
// When the stored operation already acknowledges what plan does
// (preAcknowledged), the write is not made here but after the act
// (record): it returns ok and after. Otherwise, when the reconcile may act,
// it returns ok and, if a change that decides nothing was put off by the
// statusWriter, how soon to look again (a change to the operation is never
// put off). When it may not act (someone moved first: the reconcile planned
// from a reading that is no longer current) it returns the result to end
// the reconcile with: a requeue after a conflict, or an error worth a
// rate-limited retry.
func (r *Reconciler) acknowledge(
	ctx context.Context, fc *v1alpha1.FederationCluster, status v1alpha1.FederationClusterStatus, plan rollout.Plan, now time.Time,
) (wait time.Duration, ok, after bool, res reconcile.Result, err error) {
	if equality.Semantic.DeepEqual(fc.Status, status) {
		return 0, true, false, reconcile.Result{}, nil
	}
	if preAcknowledged(fc, &status, plan) {
		return 0, true, true, reconcile.Result{}, nil
	}
	if wait := r.status.wait(fc, &status, now); wait > 0 {
		return wait, true, false, reconcile.Result{}, nil
	}
	if res, err := r.record(ctx, fc, status, now, writeAcknowledge); err != nil || res.RequeueAfter > 0 {
		return 0, false, false, res, err
	}
	return 0, true, false, reconcile.Result{}, nil
}

// When a status write is made, for fedop_status_write_seconds.
const (
	writeAcknowledge = "acknowledge"
	writeRecord      = "record"
)

// record writes status over fc's, an update with fc's resourceVersion as
// precondition, and remembers the write (statusWriter). when says whether
// it precedes the act or follows a step's deletion (the metric's label).
// A failed write comes back as writeFailed's result.
func (r *Reconciler) record(
	ctx context.Context, fc *v1alpha1.FederationCluster, status v1alpha1.FederationClusterStatus, now time.Time, when string,
) (reconcile.Result, error) {
	replaced := fc.ResourceVersion
	fc.Status = status
	start := r.clock.Now()
	err := r.client.Status().Update(ctx, fc)
	statusWrite.WithLabelValues(when).Observe(r.clock.Since(start).Seconds())
	if err != nil {
		return writeFailed(ctx, err, "writing status")
	}
	r.status.wrote(fc, now, replaced)
	return reconcile.Result{}, nil
}

// preAcknowledged reports whether fc's stored operation already
// acknowledges what plan does, so that the status write recording next
// may follow the act instead of preceding it: the step the stored
// operation names as nextPod begins, that is, the deletion of that
// instance (nextPodUID, the deletion's precondition) and nothing else, with
// the operation held by this manager (a manager taking an operation over
// writes first) and nothing else in next that must be written first
// (urgent: ordinals, generation, members, conditions). The acknowledgement
// was written with the previous step's deletion; the deletion is still
// re-checked by the planner (availability, freshness, gates) before it is
// planned.
//
// Every disruptive act is thus named by a status written with a
// resourceVersion precondition, so two managers acting on one reading can
// at most repeat the same act, which the UID precondition and the pod
// names make idempotent. What the early write gives up: a spec change the
// cache has not delivered yet no longer turns the step's write into a
// conflict, so it can cost at most that one replacement, which the
// availability re-check allowed anyway (never two pods down).
//
// The other half of one write per step is in urgent: a step moving from
// Deleting to WaitingReady on the same pod (its replacement created under
// the acknowledged name) is not worth a write of its own (stageSettled).
func preAcknowledged(fc *v1alpha1.FederationCluster, next *v1alpha1.FederationClusterStatus, plan rollout.Plan) bool {
	cur, op := fc.Status.Operation, next.Operation
	if cur == nil || op == nil || cur.Type != op.Type || !cur.StartedTime.Equal(&op.StartedTime) || cur.Holder != op.Holder ||
		plan.Drain != nil || plan.Undo != nil || len(plan.Check) > 0 || len(plan.Replace) > 0 || len(plan.Expand) > 0 {
		return false
	}
	d := plan.Delete
	if op.Stage != v1alpha1.StageDeleting || d == nil || len(plan.Create) > 0 || cur.NextPod == "" ||
		op.Pod != cur.NextPod || op.PodUID != cur.NextPodUID || d.Name != op.Pod || d.UID != op.PodUID || d.Member != op.Member {
		return false
	}
	kept := *next
	kept.Operation = cur
	return !urgent(fc, &kept)
}

// writeFailed turns a failed write to the FederationCluster into a result:
// a conflict requeues once, soon; a FederationCluster gone is nothing to
// do; anything else is returned for a rate-limited retry.
func writeFailed(ctx context.Context, err error, what string) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("Conflict, someone moved first; planning again", "while", what)
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, fmt.Errorf("%s: %w", what, err)
}

// sameOperation compares two operations, holder included: a new manager
// taking an operation over says so at once.
func sameOperation(a, b *v1alpha1.Operation) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// releaseRequested reports whether fc carries the annotation
// fedop.io/release-operation naming the startedTime of the operation its
// status holds: a user asks for that operation to be dropped.
func releaseRequested(fc *v1alpha1.FederationCluster) bool {
	v, ok := fc.Annotations[v1alpha1.AnnotationReleaseOperation]
	op := fc.Status.Operation
	return ok && op != nil && v == op.StartedTime.UTC().Format(time.RFC3339)
}

// releaseNames returns the time fc's fedop.io/release-operation
// annotation names, or zero without one or when it is not an RFC 3339 time.
func releaseNames(fc *v1alpha1.FederationCluster) time.Time {
	t, err := time.Parse(time.RFC3339, fc.Annotations[v1alpha1.AnnotationReleaseOperation])
	if err != nil {
		return time.Time{}
	}
	return t
}

// releaseRequester returns who set the release annotation, as the API
// server recorded it: the field manager that owns it in managedFields.
func releaseRequester(fc *v1alpha1.FederationCluster) string {
	field := `"f:` + v1alpha1.AnnotationReleaseOperation + `"`
	for _, mf := range fc.ManagedFields {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), field) {
			return mf.Manager
		}
	}
	return "an unknown field manager"
}
