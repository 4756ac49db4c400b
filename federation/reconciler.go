package federation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/member"
)

// ControllerName names the controller, its logger and its event reporter.
const ControllerName = "federationcluster"

// memberIndex indexes FederationClusters by the members they use.
const memberIndex = "fedop.io/members"

// conflictRequeue is how soon a reconcile that lost a resourceVersion race
// runs again. The winner's write produces a watch event too; this only
// guarantees progress if that event is filtered out (a status-only write).
const conflictRequeue = 200 * time.Millisecond

// staleRequeue is how soon a reconcile that read a FederationCluster older
// than this process's own last write of it runs again: the cache is a watch
// event behind, usually milliseconds.
const staleRequeue = 20 * time.Millisecond

// Reconciler reconciles FederationClusters: it observes their pods in every
// member cache, plans the next step with the rollout planner, records it in
// status.operation (the status-flag mutex) and takes it.
type Reconciler struct {
	// Client reads FederationClusters from the host cache and writes them.
	Client client.Client
	// Members gives each member's cluster (cache and client) and state.
	Members Members
	// Recorder records events on FederationClusters.
	Recorder events.EventRecorder
	// Identity names this manager in status.operation.holder.
	Identity string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxConcurrentReconciles bounds parallel reconciles of different
	// FederationClusters; 0 means 4.
	MaxConcurrentReconciles int

	expectations *expectations
	statusWrites *statusWrites
	readyClock   *readyClock
	// watchers are started on every member cache this controller reads
	// (Members.Watch): its pods and Services wake it.
	watchers []member.Watcher
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the controller. FederationCluster events
// pass only when the spec (generation) or annotations change: status writes
// are fedop's own. Member events wake the reconciler when something it
// waits for happens: the pods and Services of every member cache it reads
// (a watch started per member connection, see observe), and member state
// changes (Members.Source).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager) error {
	r.expectations = newExpectations()
	r.statusWrites = newStatusWrites()
	r.readyClock = newReadyClock(r.now)
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.FederationCluster{}, memberIndex, func(o client.Object) []string {
		return memberNames(o.(*v1alpha1.FederationCluster))
	}); err != nil {
		return fmt.Errorf("indexing FederationClusters by member: %w", err)
	}
	workers := r.MaxConcurrentReconciles
	if workers == 0 {
		workers = 4
	}
	c, err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.FederationCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(r.Members.Source(r.mapMember(mgr.GetClient()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Build(r)
	if err != nil {
		return err
	}
	toFC := handler.EnqueueRequestsFromMapFunc(r.mapObject)
	r.watchers = []member.Watcher{
		member.KindWatcher(ControllerName+"/pods", c, &corev1.Pod{}, toFC),
		member.KindWatcher(ControllerName+"/services", c, &corev1.Service{}, toFC),
	}
	return nil
}

// MapObject maps an object in a member cache to the FederationCluster that
// owns it, by its labels: same namespace, name in app.kubernetes.io/instance.
func MapObject(_ context.Context, obj client.Object) []reconcile.Request {
	labels := obj.GetLabels()
	if labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy || labels[v1alpha1.LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: labels[v1alpha1.LabelInstance]}}}
}

// mapObject is MapObject, noting pods that just became Ready for the step
// overhead metric on the way.
func (r *Reconciler) mapObject(ctx context.Context, obj client.Object) []reconcile.Request {
	r.readyClock.observe(obj)
	return MapObject(ctx, obj)
}

// mapMemberTimeout bounds mapMember's cache read. The read waits only
// while the FederationCluster informer has not synced yet; every
// FederationCluster is enqueued by that informer's initial list anyway, so
// giving up then loses nothing.
const mapMemberTimeout = 5 * time.Second

// mapMember maps a member to every FederationCluster that uses it.
func (r *Reconciler) mapMember(c client.Reader) func(context.Context, string) []reconcile.Request {
	return func(ctx context.Context, name string) []reconcile.Request {
		ctx, cancel := context.WithTimeout(ctx, mapMemberTimeout)
		defer cancel()
		var list v1alpha1.FederationClusterList
		if err := c.List(ctx, &list, client.MatchingFields{memberIndex: name}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

// Reconcile takes one FederationCluster one step: observe, plan, write
// status (acknowledge), act. It returns an error only for failures worth a
// rate-limited retry; an unreachable member is a condition, not an error.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	fc := &v1alpha1.FederationCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.forget(req.NamespacedName)
			r.statusWrites.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.statusWrites.stale(fc, r.now()) {
		// The cache has not caught up with this process's last status
		// write (its watch event is on the way); a write now could only
		// conflict. Status-only updates pass no predicate, so look again
		// shortly rather than wait for an event.
		return reconcile.Result{RequeueAfter: staleRequeue}, nil
	}
	if !fc.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, fc)
	}
	if controllerutil.AddFinalizer(fc, v1alpha1.Finalizer) {
		if err := r.Client.Update(ctx, fc); err != nil {
			return r.writeFailed(ctx, err, "adding the finalizer")
		}
	}

	obs, err := r.observe(ctx, fc)
	if err != nil {
		return reconcile.Result{}, err
	}
	state := r.rolloutState(fc, obs)
	plan := rollout.Next(state)
	status := computeStatus(fc, obs.memberStates(), state, plan, r.Identity)

	// Acknowledge: the operation, naming the pod about to be acted on, is
	// recorded before the action, with the resourceVersion read. A conflict
	// means someone moved first; the step is planned again from fresh state.
	// Facts that change within a step (counts, the Progressing message) are
	// written at most every statusRefresh while the operation is unchanged.
	before := fc.Status.DeepCopy()
	requeue := plan.RequeueAfter
	if !equality.Semantic.DeepEqual(fc.Status, status) {
		key := client.ObjectKeyFromObject(fc)
		if wait := r.statusWrites.defer_(key, fc, &status, obs.now); wait > 0 {
			if requeue == 0 || wait < requeue {
				requeue = wait
			}
		} else {
			replaced := fc.ResourceVersion
			fc.Status = status
			if err := r.Client.Status().Update(ctx, fc); err != nil {
				return r.writeFailed(ctx, err, "writing status")
			}
			r.statusWrites.wrote(key, obs.now, replaced)
		}
	}
	r.recordTransitions(fc, before, plan, obs)

	// Act.
	if err := r.act(ctx, fc, obs, plan); err != nil {
		return reconcile.Result{}, err
	}
	if plan.Delete != nil || len(plan.Create) > 0 {
		log.V(1).Info("Acted", "creates", len(plan.Create), "delete", plan.Delete != nil, "message", plan.Message)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// writeFailed turns a failed write to the FederationCluster into a result:
// a conflict requeues once, soon; anything else is returned for a
// rate-limited retry.
func (r *Reconciler) writeFailed(ctx context.Context, err error, what string) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("Conflict, someone moved first; planning again", "while", what)
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, fmt.Errorf("%s: %w", what, err)
}
