package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/member"
)

// cleanupRecheck is how soon a deletion still waiting for pods to go is
// looked at again, should no watch event come first.
const cleanupRecheck = 5 * time.Second

// cleanup runs while fc is being deleted: it deletes every pod and Service
// (and the claims whose policy says whenDeleted Delete) fedop created for
// fc in every member (selected by fedop's labels, so
// nothing else is touched) and drops the finalizer once every member is
// clean. A registered member that cannot be reached keeps the finalizer,
// with the CleanedUp condition naming it, until it reconnects or fc carries
// fedop.io/skip-unreachable-cleanup: "true". A member with no Secret cannot
// be reached by anyone and does not hold the deletion.
func (r *Reconciler) cleanup(ctx context.Context, fc *v1alpha1.FederationCluster) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(fc, v1alpha1.Finalizer) {
		return reconcile.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	var unreachable, remaining []string
	var errs []error
	for _, name := range memberNames(fc) {
		cl, err := r.members.Get(name)
		if errors.Is(err, member.ErrNotRegistered) {
			log.Info("Member has no Secret; nothing can be cleaned there", "member", name)
			continue
		}
		if err != nil {
			unreachable = append(unreachable, name)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
		n, err := cleanMember(wctx, cl.GetClient(), fc)
		// Discovery (discovery.go): fedop's EndpointSlices go too.
		slicesLeft, sliceErr := cleanSlices(wctx, cl.GetClient(), fc)
		n, err = n+slicesLeft, errors.Join(err, sliceErr)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", name, err))
		}
		if n > 0 || err != nil {
			remaining = append(remaining, name)
		}
	}

	skip := fc.Annotations[v1alpha1.AnnotationSkipUnreachableCleanup] == "true"
	cond := metav1.Condition{
		Type: v1alpha1.ConditionCleanedUp, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCleaningUp, ObservedGeneration: fc.Generation,
	}
	switch {
	case len(remaining) > 0:
		cond.Message = fmt.Sprintf("waiting for fedop's pods and Services to go in %s", strings.Join(remaining, ", "))
	case len(unreachable) > 0 && !skip:
		cond.Reason = v1alpha1.ReasonMemberUnreachable
		cond.Message = fmt.Sprintf("member cluster %s cannot be reached to delete fedop's objects; "+
			"the finalizer stays until it reconnects or the object is annotated %s: \"true\"",
			strings.Join(unreachable, ", "), v1alpha1.AnnotationSkipUnreachableCleanup)
	default:
		if len(unreachable) > 0 {
			r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventCleanupSkipped, "Delete",
				"Objects in unreachable member %s were left behind (%s)", strings.Join(unreachable, ", "), v1alpha1.AnnotationSkipUnreachableCleanup)
		}
		controllerutil.RemoveFinalizer(fc, v1alpha1.Finalizer)
		if err := r.client.Update(ctx, fc); err != nil {
			return writeFailed(ctx, err, "removing the finalizer")
		}
		r.forget(client.ObjectKeyFromObject(fc))
		return reconcile.Result{}, nil
	}

	st := fc.Status.DeepCopy()
	setCondition(st, fc.Generation, r.clock.Now(), cond)
	if !equality.Semantic.DeepEqual(*st, fc.Status) {
		fc.Status = *st
		if err := r.client.Status().Update(ctx, fc); err != nil {
			if res, werr := writeFailed(ctx, err, "writing status"); werr != nil || res.RequeueAfter > 0 {
				return res, werr
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if len(remaining) > 0 {
		return reconcile.Result{RequeueAfter: cleanupRecheck}, nil
	}
	// Unreachable members: their reconnection, or the annotation, wakes us.
	return reconcile.Result{}, nil
}

// cleanMember deletes fedop's pods and Services for fc in one member and
// returns how many the cache still shows. Deletions are issued only for
// objects not already going, so waiting costs no writes.
func cleanMember(ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster) (int, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
		return 0, err
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
		return 0, err
	}
	// Claims go only where their component's policy says so (whenDeleted
	// Delete), and only once no pod of fc is left in the member to mount
	// them.
	var claims []corev1.PersistentVolumeClaim
	if len(pods.Items) == 0 {
		var list corev1.PersistentVolumeClaimList
		if err := c.List(ctx, &list, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
			return 0, err
		}
		for _, claim := range list.Items {
			// A claim being deleted is done with: Kubernetes' protection
			// of claims in use removes it once no pod mounts it.
			if claim.DeletionTimestamp == nil && deletesClaimsWithFC(specComponent(fc, claim.Labels[v1alpha1.LabelComponent])) {
				claims = append(claims, claim)
			}
		}
	}
	live := slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp == nil })
	var errs []error
	for i := range claims {
		uid := claims[i].UID
		if err := c.Delete(ctx, &claims[i], client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting claim %s: %w", claims[i].Name, err))
		}
	}
	if live {
		if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
			errs = append(errs, fmt.Errorf("deleting pods: %w", err))
		}
	}
	for i := range svcs.Items {
		if svcs.Items[i].DeletionTimestamp != nil {
			continue
		}
		if err := client.IgnoreNotFound(c.Delete(ctx, &svcs.Items[i])); err != nil {
			errs = append(errs, fmt.Errorf("deleting service %s: %w", svcs.Items[i].Name, err))
		}
	}
	return len(pods.Items) + len(svcs.Items) + len(claims), errors.Join(errs...)
}

// specComponent returns fc's component name, or nil.
func specComponent(fc *v1alpha1.FederationCluster, name string) *v1alpha1.Component {
	for i := range fc.Spec.Components {
		if fc.Spec.Components[i].Name == name {
			return &fc.Spec.Components[i]
		}
	}
	return nil
}
