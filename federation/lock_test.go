package federation

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/member"
)

// fakeCluster is a member cluster whose client is a fake; the reconciler
// uses nothing else of a cluster.Cluster.
type fakeCluster struct {
	cluster.Cluster
	c client.Client
}

func (f fakeCluster) GetClient() client.Client { return f.c }

// fakeMembers serves fake member clusters; a member absent from clusters
// is registered but disconnected.
type fakeMembers struct {
	clusters map[string]client.Client
}

func (f fakeMembers) Get(name string) (cluster.Cluster, error) {
	if c, ok := f.clusters[name]; ok {
		return fakeCluster{c: c}, nil
	}
	return nil, member.ErrDisconnected
}

func (f fakeMembers) State(name string) member.State {
	_, ok := f.clusters[name]
	return member.State{Name: name, Registered: true, Connected: ok, Fresh: ok}
}

func (f fakeMembers) Names() []string { return slices.Sorted(maps.Keys(f.clusters)) }

// Watch starts nothing: these tests call Reconcile themselves.
func (f fakeMembers) Watch(context.Context, string, member.Watcher) error { return nil }

func (f fakeMembers) Source(func(context.Context, string) []reconcile.Request) source.SyncingSource {
	return nil
}

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	return s
}

// upgradeFixture is a FederationCluster whose one pod is outdated: the next
// reconcile must replace it.
func upgradeFixture() (*v1alpha1.FederationCluster, *corev1.Pod) {
	c := testComponent()
	fc := &v1alpha1.FederationCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", Generation: 2, Finalizers: []string{v1alpha1.Finalizer}},
		Spec: v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{{
			Name: "pd", Template: c.Template, Topology: []v1alpha1.Placement{{Member: "k8s-a", Replicas: 1}},
		}}},
	}
	c, p := &fc.Spec.Components[0], &fc.Spec.Components[0].Topology[0]
	pod := desiredPod(fc, c, p, EffectiveTemplate(c, p), "old", "demo-pd-0")
	pod.UID = "uid-old"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return fc, pod
}

type harness struct {
	r       *Reconciler
	members fakeMembers
	host    client.Client
	deletes []client.DeleteOptions
	// opAtDelete is status.operation as stored on the host when each
	// deletion reached the member; opAtCreate the same for each pod
	// creation.
	opAtDelete, opAtCreate []*v1alpha1.Operation
	// statusWrites counts the status writes that reached the host.
	statusWrites int
	// onDelete, when set, runs as each deletion reaches the member.
	onDelete func()
	clock    *clocktesting.FakeClock
}

// withInstanceIndex adds the member caches' indexes (CachedIndexes) to a
// fake member client, which observe's reads select by.
func withInstanceIndex(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, ix := range CachedIndexes() {
		b = b.WithIndex(ix.Object, ix.Field, ix.Extract)
	}
	return b
}

func newHarness(t *testing.T, fc *v1alpha1.FederationCluster, statusErr error, pods ...client.Object) *harness {
	s := testScheme(t)
	h := &harness{}
	h.host = fake.NewClientBuilder().WithScheme(s).WithObjects(fc).WithStatusSubresource(fc).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if statusErr != nil {
					return statusErr
				}
				h.statusWrites++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	svc := desiredService(fc, &fc.Spec.Components[0], "k8s-a")
	memberClient := withInstanceIndex(fake.NewClientBuilder().WithScheme(s)).WithObjects(append(pods, svc)...).
		WithInterceptorFuncs(interceptor.Funcs{
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				o := client.DeleteOptions{}
				o.ApplyOptions(opts)
				h.deletes = append(h.deletes, o)
				stored := &v1alpha1.FederationCluster{}
				require.NoError(t, h.host.Get(ctx, client.ObjectKeyFromObject(fc), stored))
				h.opAtDelete = append(h.opAtDelete, stored.Status.Operation)
				if h.onDelete != nil {
					h.onDelete()
				}
				return c.Delete(ctx, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.Pod); ok {
					stored := &v1alpha1.FederationCluster{}
					require.NoError(t, h.host.Get(ctx, client.ObjectKeyFromObject(fc), stored))
					h.opAtCreate = append(h.opAtCreate, stored.Status.Operation)
				}
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
	h.members = fakeMembers{clusters: map[string]client.Client{"k8s-a": memberClient}}
	h.clock = clocktesting.NewFakeClock(time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC))
	h.r = NewReconciler(Options{
		Client:   h.host,
		Members:  h.members,
		Recorder: events.NewFakeRecorder(100),
		Identity: "test-manager",
		Clock:    h.clock,
	})
	return h
}

// recorderFunc is an events.EventRecorder that hands each event's reason
// to a function, in the reconcile's goroutine.
type recorderFunc func(reason string)

func (f recorderFunc) Eventf(_, _ runtime.Object, _, reason, _, _ string, _ ...any) { f(reason) }

// reconcileFC runs the discovery controller's reconcile, then the rolling
// controller's, for fc: what the two controllers of a manager do after an
// event, in one order.
func reconcileFC(t *testing.T, h *harness, fc *v1alpha1.FederationCluster) (reconcile.Result, error) {
	t.Helper()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fc)}
	if _, err := h.r.reconcileDiscovery(context.Background(), req); err != nil {
		return reconcile.Result{}, err
	}
	return h.r.Reconcile(context.Background(), req)
}

// TestMutexConflictStopsTheStep: when the status write that takes the
// mutex loses a resourceVersion race, nothing is done in any member and the
// reconcile is requeued once, not retried in a loop.
func TestMutexConflictStopsTheStep(t *testing.T) {
	fc, pod := upgradeFixture()
	conflict := apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("federationclusters").GroupResource(), fc.Name, nil)
	h := newHarness(t, fc, conflict, pod)

	res, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Equal(t, conflictRequeue, res.RequeueAfter)
	assert.Empty(t, h.deletes, "no pod may be deleted without the operation recorded")
}

// TestMutexAcknowledgeThenAct: the operation naming the pod is stored before
// the pod is deleted, and the deletion carries the recorded UID.
func TestMutexAcknowledgeThenAct(t *testing.T) {
	fc, pod := upgradeFixture()
	h := newHarness(t, fc, nil, pod)

	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	require.Len(t, h.deletes, 1)
	require.NotNil(t, h.deletes[0].Preconditions)
	assert.Equal(t, types.UID("uid-old"), *h.deletes[0].Preconditions.UID)
	require.NotNil(t, h.opAtDelete[0], "the operation must be stored before the deletion")
	assert.Equal(t, v1alpha1.OperationUpgrade, h.opAtDelete[0].Type)
	assert.Equal(t, "demo-pd-0", h.opAtDelete[0].Pod)
	assert.Equal(t, types.UID("uid-old"), h.opAtDelete[0].PodUID)
	assert.Equal(t, "test-manager", h.opAtDelete[0].Holder)

	stored := &v1alpha1.FederationCluster{}
	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	assert.Equal(t, int64(2), stored.Status.ObservedGeneration)
	progressing := meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, progressing)
	assert.Equal(t, metav1.ConditionTrue, progressing.Status)
	assert.Equal(t, v1alpha1.ReasonUpgrading, progressing.Reason)
	assert.Contains(t, progressing.Message, "demo-pd-0")
}

// TestMutexResumesAfterRestart: a new process (no expectations) that finds
// the operation naming a pod whose old instance is still there repeats
// that deletion, with the same UID, and deletes nothing else.
func TestMutexResumesAfterRestart(t *testing.T) {
	fc, pod := upgradeFixture()
	fc.Status.Operation = &v1alpha1.Operation{
		Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "k8s-a", Pod: "demo-pd-0", PodUID: "uid-old", Holder: "dead-manager",
	}
	h := newHarness(t, fc, nil, pod)

	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	require.Len(t, h.deletes, 1)
	assert.Equal(t, types.UID("uid-old"), *h.deletes[0].Preconditions.UID)
	assert.Equal(t, "test-manager", h.opAtDelete[0].Holder, "the new manager takes the operation over")

	// The next reconcile sees the old instance gone and recreates the pod
	// with the same name at the update revision; nothing else is deleted.
	_, err = reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Len(t, h.deletes, 1)
	recreated := &corev1.Pod{}
	require.NoError(t, h.members.clusters["k8s-a"].Get(context.Background(), client.ObjectKeyFromObject(pod), recreated))
	want, err := Revision(EffectiveTemplate(&fc.Spec.Components[0], &fc.Spec.Components[0].Topology[0]))
	require.NoError(t, err)
	assert.Equal(t, want, recreated.Labels[v1alpha1.LabelRevision])
	assert.Equal(t, "k8s-a", recreated.Labels[v1alpha1.LabelMember])
}

// TestDisconnectedMemberBlocksDeletion: with the member disconnected, the
// upgrade takes the mutex but deletes nothing, and the conditions say why.
func TestDisconnectedMemberBlocksDeletion(t *testing.T) {
	fc, pod := upgradeFixture()
	fc.Spec.Components[0].Topology = append(fc.Spec.Components[0].Topology, v1alpha1.Placement{Member: "k8s-b", Replicas: 1})
	h := newHarness(t, fc, nil, pod)

	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Empty(t, h.deletes)
	stored := &v1alpha1.FederationCluster{}
	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	mc := meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ConditionMembersConnected)
	require.NotNil(t, mc)
	assert.Equal(t, metav1.ConditionFalse, mc.Status)
	assert.Equal(t, v1alpha1.ReasonMemberDisconnected, mc.Reason)
	assert.Contains(t, mc.Message, "k8s-b")
}

// twoPodUpgrade is a FederationCluster of two pods in k8s-a whose step on
// demo-pd-1 waits for its replacement (at the update revision, not Ready)
// while status, held by holder, already names demo-pd-0 as nextPod.
func twoPodUpgrade(holder string) (fc *v1alpha1.FederationCluster, old, replacement *corev1.Pod) {
	fc, old = upgradeFixture()
	fc.Spec.Components[0].Topology[0].Replicas = 2
	c, p := &fc.Spec.Components[0], &fc.Spec.Components[0].Topology[0]
	rev, err := Revision(EffectiveTemplate(c, p))
	if err != nil {
		panic(err)
	}
	replacement = desiredPod(fc, c, p, EffectiveTemplate(c, p), rev, "demo-pd-1")
	replacement.UID = "uid-new"
	fc.Status.Operation = &v1alpha1.Operation{
		Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "k8s-a", Pod: "demo-pd-1", PodUID: "uid-gone",
		Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "uid-old", Holder: holder,
		StartedTime: metav1.NewTime(time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)),
	}
	return fc, old, replacement
}

// markReady makes pod Ready in the member h serves as k8s-a.
func markReady(t *testing.T, h *harness, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	c := h.members.clusters["k8s-a"]
	got := &corev1.Pod{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), got))
	got.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	require.NoError(t, c.Status().Update(ctx, got))
}

// TestMutexPreAcknowledgedStepActsFirst (Performance issue: no host write
// between a replacement's Ready and the next deletion): while demo-pd-1's
// replacement comes up, status keeps naming demo-pd-0 as nextPod. Once the
// replacement is Ready, demo-pd-0 is deleted with that UID as precondition
// while status still shows the acknowledgement, and the step is recorded
// right after.
func TestMutexPreAcknowledgedStepActsFirst(t *testing.T) {
	fc, old, replacement := twoPodUpgrade("test-manager")
	h := newHarness(t, fc, nil, old, replacement)

	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	require.Empty(t, h.deletes, "the replacement is not Ready: nothing may be deleted")
	stored := &v1alpha1.FederationCluster{}
	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	require.NotNil(t, stored.Status.Operation)
	assert.Equal(t, "demo-pd-0", stored.Status.Operation.NextPod, "the next step stays acknowledged while the replacement comes up")

	// The write that records the step is held until the deletion reaches
	// the member: a reconcile that waited for it before deleting would
	// leave it holding until the timeout.
	markReady(t, h, replacement)
	deleted := make(chan struct{})
	h.onDelete = func() { close(deleted) }
	heldOff := false
	h.r.client = interceptor.NewClient(h.host.(client.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			select {
			case <-deleted:
			case <-time.After(5 * time.Second):
				heldOff = true
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	acks, records := statusWrites(t, writeAcknowledge), statusWrites(t, writeRecord)
	// Events go out after the writes: the status writes that had reached
	// the host when each was recorded.
	writesBefore := h.statusWrites
	eventWrites := map[string]int{}
	h.r.recorder = recorderFunc(func(reason string) { eventWrites[reason] = h.statusWrites })
	_, err = reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.False(t, heldOff, "the deletion did not wait for the status write")
	require.Contains(t, eventWrites, EventPodReplaced, "the reconcile that deletes the next pod ends the step before")
	assert.Equal(t, writesBefore+1, eventWrites[EventPodReplaced],
		"the step's event is recorded after the status write that follows the deletion, not racing them to the host")
	assert.Equal(t, acks, statusWrites(t, writeAcknowledge), "fedop_status_write_seconds: no write before the act")
	assert.Equal(t, records+1, statusWrites(t, writeRecord), "fedop_status_write_seconds: one write after the deletion")
	h.r.client, h.onDelete = h.host, nil
	require.Len(t, h.deletes, 1)
	assert.Equal(t, types.UID("uid-old"), *h.deletes[0].Preconditions.UID)
	require.NotNil(t, h.opAtDelete[0])
	assert.Equal(t, "demo-pd-1", h.opAtDelete[0].Pod, "no status write came between the Ready and the deletion")
	assert.Equal(t, "demo-pd-0", h.opAtDelete[0].NextPod, "the deletion was acknowledged as nextPod")

	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	op := stored.Status.Operation
	require.NotNil(t, op)
	assert.Equal(t, "demo-pd-0", op.Pod, "the step is recorded after the deletion")
	assert.Equal(t, types.UID("uid-old"), op.PodUID)
	assert.Equal(t, v1alpha1.StageDeleting, op.Stage)
	assert.Empty(t, op.NextPod)

	// The old instance is gone (the fake member deletes at once): its pod
	// is created under its acknowledged name, and the step settling into
	// WaitingReady is not written by itself: one status write per step,
	// the one after the deletion.
	writes := h.statusWrites
	_, err = reconcileFC(t, h, fc)
	require.NoError(t, err)
	require.Len(t, h.opAtCreate, 1)
	assert.Equal(t, v1alpha1.StageDeleting, h.opAtCreate[0].Stage, "the creation needs no write first: the name was acknowledged")
	assert.Equal(t, writes, h.statusWrites, "stage WaitingReady waits for the next write")
	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	require.NotNil(t, stored.Status.Operation)
	assert.Equal(t, v1alpha1.StageDeleting, stored.Status.Operation.Stage)
	assert.Equal(t, "demo-pd-0", stored.Status.Operation.Pod)

	// Read back as stored (Deleting, the old UID), the step is where it
	// is: its replacement is waited for, nothing is deleted or created.
	_, err = reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Len(t, h.deletes, 1)
	assert.Len(t, h.opAtCreate, 1)
	assert.Equal(t, writes, h.statusWrites)

	// Once statusRefresh has passed, the stage is written with the counts.
	h.clock.Step(statusRefresh)
	_, err = reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Equal(t, writes+1, h.statusWrites)
	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	require.NotNil(t, stored.Status.Operation)
	assert.Equal(t, v1alpha1.StageWaitingReady, stored.Status.Operation.Stage)
	assert.Equal(t, "demo-pd-0", stored.Status.Operation.Pod)
}

// statusWrites returns how many writes fedop_status_write_seconds has
// timed with label when.
func statusWrites(t *testing.T, when string) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, statusWrite.WithLabelValues(when).(prometheus.Metric).Write(&m))
	return m.GetHistogram().GetSampleCount()
}

// TestMutexTakeoverWritesBeforeActing: the same acknowledged step, held by
// another manager: this one takes the operation over with a status write
// before it deletes anything.
func TestMutexTakeoverWritesBeforeActing(t *testing.T) {
	fc, old, replacement := twoPodUpgrade("dead-manager")
	replacement.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	h := newHarness(t, fc, nil, old, replacement)

	acks := statusWrites(t, writeAcknowledge)
	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Equal(t, acks+1, statusWrites(t, writeAcknowledge), "fedop_status_write_seconds: the takeover's write before the act")
	require.Len(t, h.deletes, 1)
	require.NotNil(t, h.opAtDelete[0])
	assert.Equal(t, "test-manager", h.opAtDelete[0].Holder)
	assert.Equal(t, "demo-pd-0", h.opAtDelete[0].Pod, "the step is recorded before the deletion")
}

// TestMutexPreAcknowledgedStepConflict: when the write that records an
// acknowledged step after its deletion conflicts (someone moved first),
// the reconcile ends with the conflict requeue and the next one, from the
// status as stored, deletes nothing more: the deleted pod comes back under
// its name.
func TestMutexPreAcknowledgedStepConflict(t *testing.T) {
	fc, old, replacement := twoPodUpgrade("test-manager")
	h := newHarness(t, fc, nil, old, replacement)
	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	markReady(t, h, replacement)

	conflict := apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("federationclusters").GroupResource(), fc.Name, nil)
	h.r.client = interceptor.NewClient(h.host.(client.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return conflict
		},
	})
	res, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Equal(t, conflictRequeue, res.RequeueAfter)
	require.Len(t, h.deletes, 1, "the acknowledged deletion was sent")

	h.r.client = h.host
	_, err = reconcileFC(t, h, fc)
	require.NoError(t, err)
	assert.Len(t, h.deletes, 1, "nothing else is deleted")
	recreated := &corev1.Pod{}
	require.NoError(t, h.members.clusters["k8s-a"].Get(context.Background(), client.ObjectKeyFromObject(old), recreated))
	assert.NotEqual(t, "old", recreated.Labels[v1alpha1.LabelRevision], "demo-pd-0 is back under its name, at the update revision")
}

// TestCreationWaitsForDiscovery: a pod is created in a member only once the
// member's cache shows its component's Service and every EndpointSlice it
// should have there; the discovery controller writes them, and nothing
// before fedop's finalizer is on (cleanup would not remove it).
func TestCreationWaitsForDiscovery(t *testing.T) {
	fc, old, _ := twoPodUpgrade("test-manager")
	fc.Finalizers = nil
	old.Status.PodIP, old.Status.PodIPs = "10.1.0.5", []corev1.PodIP{{IP: "10.1.0.5"}}
	h := newHarness(t, fc, nil, old) // demo-pd-1, the step's pod, is missing
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fc)}
	slicesInMember := func() []string {
		var list discoveryv1.EndpointSliceList
		require.NoError(t, h.members.clusters["k8s-a"].List(ctx, &list, client.InNamespace(fc.Namespace)))
		var names []string
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		return names
	}

	_, err := h.r.reconcileDiscovery(ctx, req)
	require.NoError(t, err)
	assert.Empty(t, slicesInMember(), "nothing is written before fedop's finalizer is on")

	_, err = h.r.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Empty(t, h.opAtCreate, "the slice listing demo-pd-0 is not in the member yet: demo-pd-1 waits")

	_, err = h.r.reconcileDiscovery(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, []string{SliceName(fc, "pd", "k8s-a", discoveryv1.AddressTypeIPv4, 0)}, slicesInMember())

	_, err = h.r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.Len(t, h.opAtCreate, 1, "in place: demo-pd-1 is created")
	created := &corev1.Pod{}
	require.NoError(t, h.members.clusters["k8s-a"].Get(ctx, client.ObjectKey{Namespace: fc.Namespace, Name: "demo-pd-1"}, created))
}
