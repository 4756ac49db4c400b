package federation

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/member"
)

// ControllerName names the controller, its logger and its event reporter.
const ControllerName = "federationcluster"

// DiscoveryControllerName names the controller that writes the members'
// discovery objects (discovery.go), beside the one that rolls pods.
const DiscoveryControllerName = ControllerName + "-discovery"

// memberIndex indexes FederationClusters by the members they use.
const memberIndex = "fedop.io/members"

// Options configures a Reconciler. Client, Members and Recorder are
// required; the rest have defaults.
type Options struct {
	// Client reads FederationClusters from the host cache and writes them.
	Client client.Client
	// Members gives each member's cluster (cache and client), its state,
	// watches on its cache and its state changes.
	Members Members
	// Recorder records events on FederationClusters.
	Recorder events.EventRecorder
	// Identity names this manager in status.operation.holder.
	Identity string
	// Clock is the reconciler's only source of time. Default the real
	// clock.
	Clock clock.Clock
	// MaxConcurrentReconciles bounds parallel reconciles of different
	// FederationClusters. Default 4.
	MaxConcurrentReconciles int
	// Hooks calls the components' lifecycle hooks on pods. Default a
	// PodProxyCaller: through each member's API server.
	Hooks HookCaller
	// DiscoveryBatchPeriod is how long the discovery controller gathers
	// member events before it writes the slices they call for: one write
	// per slice per period, out of the way of the step the same events
	// drive (kube-controller-manager's --endpointslice-updates-batch-period
	// does the same for its slices). 0 writes on every event.
	DiscoveryBatchPeriod time.Duration
}

// Reconciler reconciles FederationClusters: it observes their pods in every
// member cache, plans the next step with the rollout planner, records it in
// status.operation (the status-flag mutex) and takes it. Build it with
// NewReconciler.
type Reconciler struct {
	client   client.Client
	members  Members
	recorder events.EventRecorder
	identity string
	clock    clock.Clock
	workers  int
	// batch is Options.DiscoveryBatchPeriod.
	batch time.Duration

	expectations *expectations
	// issues are what the last act of each FederationCluster could not
	// do, for its next status.
	issues *issueStore
	status *statusWriter
	steps  *stepClock
	// caller calls lifecycle hooks; hooks remembers how they went.
	caller HookCaller
	hooks  *hookRuns
	// watchers are started on every member cache this controller reads
	// (Members.Watch, in observe): pods, Services and claims wake the
	// reconciler, and pods feed the step clock.
	watchers []member.Watcher
	// wake carries FederationClusters whose discovery issues changed from
	// the discovery controller to this one, whose status reports them.
	wake chan event.GenericEvent
}

// NewReconciler returns a Reconciler with every helper built. It is ready
// for Reconcile; SetupWithManager registers it with a manager.
func NewReconciler(o Options) *Reconciler {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	if o.Hooks == nil {
		o.Hooks = NewPodProxyCaller()
	}
	return &Reconciler{
		client:       o.Client,
		members:      o.Members,
		recorder:     o.Recorder,
		identity:     o.Identity,
		clock:        o.Clock,
		workers:      o.MaxConcurrentReconciles,
		batch:        o.DiscoveryBatchPeriod,
		expectations: newExpectations(),
		issues:       newIssueStore(),
		status:       newStatusWriter(o.Clock),
		steps:        newStepClock(o.Clock),
		caller:       o.Hooks,
		hooks:        newHookRuns(flowcontrol.NewFakeBackOffWithJitter(hookBackoffInitial, hookBackoffMax, o.Clock, 0.1)),
		wake:         make(chan event.GenericEvent, wakeBuffer),
	}
}

// SetupWithManager registers two controllers on the same informers. The
// first (ControllerName) rolls pods: FederationCluster events pass when
// the spec (generation) or annotations change, or status changes by
// someone else's write (a user's edit is noticed at once); fedop's own
// status writes do not wake it. Member events wake it when something it
// waits for happens: the pods, Services and claims of every member cache
// it reads (watches started per member connection, see observe), a
// component's EndpointSlice created or deleted (its creations wait for
// them), and member state changes (Members.Source). The second
// (DiscoveryControllerName, reconcileDiscovery) keeps every member's
// headless Services and EndpointSlices in step with the pods, on a
// workqueue of its own, so that a slice write never holds a step: it is
// woken by spec changes, the finalizer, pods, Services and slices, and
// member state changes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.FederationCluster{}, memberIndex, func(o client.Object) []string {
		return memberNames(o.(*v1alpha1.FederationCluster))
	}); err != nil {
		return fmt.Errorf("indexing FederationClusters by member: %w", err)
	}
	c, err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.FederationCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, r.status.othersStatusWrites()))).
		WatchesRawSource(r.members.Source(r.mapMember(mgr.GetClient()))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Build(r)
	if err != nil {
		return err
	}
	d, err := builder.ControllerManagedBy(mgr).
		Named(DiscoveryControllerName).
		For(&v1alpha1.FederationCluster{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, finalizersChanged()))).
		WatchesRawSource(r.members.Source(r.mapMember(mgr.GetClient()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Build(reconcile.Func(r.reconcileDiscovery))
	if err != nil {
		return err
	}
	toFC := handler.EnqueueRequestsFromMapFunc(MapObject)
	batched := enqueueAfter(r.batch)
	r.watchers = []member.Watcher{
		member.KindWatcher(ControllerName+"/pods", c, &corev1.Pod{}, toFC),
		member.KindWatcher(ControllerName+"/services", c, &corev1.Service{}, toFC),
		member.KindWatcher(ControllerName+"/claims", c, &corev1.PersistentVolumeClaim{}, toFC),
		member.KindWatcher(ControllerName+"/step-clock", c, &corev1.Pod{}, r.steps.handler()),
		// A slice created or deleted changes where discovery is in place
		// (discoveryInPlace); its updates concern only the discovery
		// controller.
		member.KindWatcher(ControllerName+"/endpointslices", c, &discoveryv1.EndpointSlice{}, toFC,
			predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}),
		member.KindWatcher(DiscoveryControllerName+"/pods", d, &corev1.Pod{}, batched),
		member.KindWatcher(DiscoveryControllerName+"/services", d, &corev1.Service{}, batched),
		// A change to fedop's EndpointSlices, or to those
		// kube-controller-manager left, is drift to repair.
		member.KindWatcher(DiscoveryControllerName+"/endpointslices", d, &discoveryv1.EndpointSlice{}, batched),
	}
	return nil
}

// enqueueAfter returns the handler that enqueues MapObject's requests
// after period: the events of one period make one reconcile, since a
// request already waiting keeps its time. 0 enqueues at once.
func enqueueAfter(period time.Duration) handler.EventHandler {
	if period <= 0 {
		return handler.EnqueueRequestsFromMapFunc(MapObject)
	}
	add := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range MapObject(ctx, obj) {
			q.AddAfter(req, period)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectOld, q)
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

// finalizersChanged passes a FederationCluster update that changes its
// finalizers: the discovery controller writes nothing before fedop's
// finalizer is on (cleanup would not remove it).
func finalizersChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
	}}
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

// mapMemberTimeout bounds mapMember's cache read. The read waits only
// while the FederationCluster informer has not synced yet; every
// FederationCluster is enqueued by that informer's initial list anyway, so
// giving up then loses nothing.
const mapMemberTimeout = 5 * time.Second

// mapMember maps a member's state change to every FederationCluster that
// uses it. A member that connects (or is listed again) gets the
// controller's watches on its new cache at once, so that its pods wake the
// FederationClusters they belong to, whether or not those still name the
// member: one that was dropped while the member could not be seen drains
// its leftovers when it sees them.
func (r *Reconciler) mapMember(c client.Reader) func(context.Context, string) []reconcile.Request {
	return func(ctx context.Context, name string) []reconcile.Request {
		if r.members.State(name).Connected {
			if err := r.watch(ctx, name); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Starting watches on a member cluster", "member", name)
			}
		}
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
// status (acknowledge), act; or, when the stored operation acknowledged
// the step already (preAcknowledged), act, then write status. It returns an error only for failures worth a
// rate-limited retry; an unreachable member is a condition, not an error.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	times := &stepTimes{start: r.clock.Now()}
	fc := &v1alpha1.FederationCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The cache may not have caught up with this process's last status
	// write yet (its watch event is on the way): plan from what that write
	// returned, not from the copy it replaced, which could only end in a
	// conflict.
	fc = r.status.current(fc)
	if !fc.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, fc)
	}
	if controllerutil.AddFinalizer(fc, v1alpha1.Finalizer) {
		if err := r.client.Update(ctx, fc); err != nil {
			return writeFailed(ctx, err, "adding the finalizer")
		}
	}

	obs, err := r.observe(ctx, fc)
	if err != nil {
		return reconcile.Result{}, err
	}
	times.observed = r.clock.Now()
	state := r.rolloutState(fc, obs)
	plan, hooks := r.planWithHooks(ctx, fc, obs, &state)
	status := computeStatus(fc, obs.memberStates(), state, plan, r.identity)
	reportIssues(&status, fc.Generation, obs.now, r.issues.get(client.ObjectKeyFromObject(fc)))

	before := fc.Status.DeepCopy()
	times.planned = r.clock.Now()
	requeue, ok, after, res, err := r.acknowledge(ctx, fc, status, plan, obs.now)
	if !ok {
		return res, err
	}
	times.acknowledged = r.clock.Now()
	if after {
		// Acknowledged already (preAcknowledged): act first, record after.
		fc.Status = status
	}
	requeue = minPositive(requeue, plan.RequeueAfter)
	requeue = minPositive(requeue, hooks.retryAfter)
	if hooks.callNext {
		// The plan entered a stage whose hook is called once status
		// records it: now.
		requeue = minPositive(requeue, stageRequeue)
	}
	// The events go out when the reconcile ends, however it ends: after
	// the act and the status write that records it, which they would
	// otherwise race to the host (an event is a write there too).
	defer func() {
		r.recordTransitions(fc, before, plan, obs, pendingClaims(state, plan.Stuck))
		r.recordHooks(fc, before, plan, hooks)
	}()

	exportStatus(req.NamespacedName, &status)
	var prev v1alpha1.OperationType
	if before.Operation != nil {
		prev = before.Operation.Type
	}
	if err := r.act(ctx, fc, obs, plan, prev, times); err != nil {
		return reconcile.Result{}, err
	}
	if after {
		// After the deletion returned: the write must not be seen before
		// the deletion it records (a step's critical path ends there).
		if res, err := r.record(ctx, fc, status, obs.now, writeRecord); err != nil || res.RequeueAfter > 0 {
			return res, err
		}
	}
	if plan.Delete != nil || len(plan.Create) > 0 {
		log.V(1).Info("Acted", "creates", len(plan.Create), "delete", plan.Delete != nil, "message", plan.Message)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// forget drops what this process remembers of FederationCluster key.
func (r *Reconciler) forget(key client.ObjectKey) {
	r.expectations.forget(key)
	r.issues.forget(key)
	r.status.forget(key)
	r.hooks.forget(key)
	forgetStatus(key)
}
