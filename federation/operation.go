package federation

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
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

// staleRequeue is how soon a reconcile that read a FederationCluster older
// than this process's own last write of it runs again: the cache is a watch
// event behind, usually milliseconds.
const staleRequeue = 20 * time.Millisecond

// acknowledge writes status over fc's: "acknowledge, then actuate, then
// record" of the Kubernetes API conventions. status carries the operation
// the plan holds, stamped with this manager as holder (computeStatus), so
// this one write takes the mutex (nil to an operation), names the pod of
// the next step before any member is touched, or releases it (an operation
// to nil). The write is an update with fc's resourceVersion as
// precondition.
//
// When the reconcile may act, it returns ok and, if a change that decides
// nothing was put off by the statusWriter, how soon to look again (a
// change to the operation is never put off). Otherwise (someone moved
// first: the reconcile planned from a reading that is no longer current,
// so it must not act) it returns the result to end the reconcile with: a
// requeue after a conflict, or an error worth a rate-limited retry.
func (r *Reconciler) acknowledge(
	ctx context.Context, fc *v1alpha1.FederationCluster, status v1alpha1.FederationClusterStatus, now time.Time,
) (wait time.Duration, ok bool, res reconcile.Result, err error) {
	if equality.Semantic.DeepEqual(fc.Status, status) {
		return 0, true, reconcile.Result{}, nil
	}
	if wait := r.status.wait(fc, &status, now); wait > 0 {
		return wait, true, reconcile.Result{}, nil
	}
	replaced := fc.ResourceVersion
	fc.Status = status
	if err := r.client.Status().Update(ctx, fc); err != nil {
		res, err := writeFailed(ctx, err, "writing status")
		return 0, false, res, err
	}
	r.status.wrote(client.ObjectKeyFromObject(fc), now, replaced, fc.ResourceVersion)
	return 0, true, reconcile.Result{}, nil
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
