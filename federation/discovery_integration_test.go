package federation_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/internal/testenv"
)

// The integration test of discovery (federation/discovery.go): in every
// member, each component's Service is backed by fedop's EndpointSlices,
// which list the pods of both members and follow them.

// TestDiscovery checks the slices of sampleFC in both members: after an
// earlier fedop's Service (with a selector, and what kube-controller-manager
// made of it) is taken over; after a pod is replaced (a new IP, from the
// fake kubelet); after a scale-in; while a member is cut off (its pods stay
// listed, not serving) and after; and that the deletion takes them away.
// It logs the propagation figures of ten replacements, as the e2e suite's
// SliceWatch measures them.
func TestDiscovery(t *testing.T) {
	env, _ := federationEnv(t)
	ns := setupNamespace(t, env, "discovery")
	key := client.ObjectKey{Namespace: ns, Name: fcName}
	d := createDecoys(t, env, ns)
	earlier := earlierFedopService(t, env.Member(memberA), ns)
	startFedop(t, env, ns+"-1")
	fc := sampleFC(ns)
	createFC(t, env, fc)
	requireSettled(t, env, key)
	requireSlicesMatchPods(t, env, fc, "initialized")

	// The earlier Service lost its selector, in place, and what
	// kube-controller-manager made of it is gone.
	a := env.Member(memberA).Client
	var svc corev1.Service
	require.NoError(t, a.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo-pd"}, &svc))
	assert.Equal(t, earlier.GetUID(), svc.UID, "the Service was replaced, not updated")
	assert.Nil(t, svc.Spec.Selector)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var list discoveryv1.EndpointSliceList
		require.NoError(c, a.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "demo-pd"}))
		for _, s := range list.Items {
			assert.Equal(c, v1alpha1.EndpointSliceManagedBy, s.Labels[discoveryv1.LabelManagedBy], "slice %s", s.Name)
		}
		err := a.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-pd"}, endpointsObject())
		assert.True(c, apierrors.IsNotFound(err), "the endpoints controller's Endpoints: %v", err)
	}, wait, tick)

	// A replaced pod: its new IP, in both members.
	before := memberPods(t, env, ns)["k8s-b/demo-pd-2"]
	replace(t, env, ns, memberB, "demo-pd-2")
	requireSlicesMatchPods(t, env, fc, "after a replacement")
	assert.NotEqual(t, before.Status.PodIP, memberPods(t, env, ns)["k8s-b/demo-pd-2"].Status.PodIP, "the fake kubelet gives a replacement a new IP")

	// A scale-in: the removed pod leaves every member's slices.
	fc = updateFC(t, env, key, func(fc *v1alpha1.FederationCluster) { fc.Spec.Components[1].Topology[1].Replicas = 1 })
	requireSettled(t, env, key)
	requireSlicesMatchPods(t, env, fc, "after a scale-in")

	// k8s-b cut off: k8s-a keeps listing its pods, no longer serving.
	proxy := env.Member(memberB).Proxy
	proxy.Sever()
	t.Cleanup(proxy.Restore)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var s discoveryv1.EndpointSlice
		require.NoError(c, a.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-tikv.k8s-b.ipv4"}, &s))
		var names []string
		for _, e := range s.Endpoints {
			names = append(names, *e.Hostname)
			assert.False(c, *e.Conditions.Serving, "%s is serving", *e.Hostname)
			assert.True(c, *e.Conditions.Ready, "%s is no longer published", *e.Hostname)
		}
		assert.Equal(c, []string{"demo-tikv-2"}, names)
	}, wait, tick, "k8s-b's pods in k8s-a while k8s-b is cut off")
	proxy.Restore()
	requireSettled(t, env, key)
	requireSlicesMatchPods(t, env, fc, "after k8s-b is back")

	// The figures: ten replacements of a pod of k8s-b.
	w, err := e2e.StartSliceWatch(t.Context(), e2e.SliceWatchOptions{
		Members: map[string]*rest.Config{memberA: env.Member(memberA).Config, memberB: env.Member(memberB).Config}, Namespace: ns, Name: fcName,
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	for i := range 10 {
		replace(t, env, ns, memberB, "demo-pd-2")
		requireSlicesMatchPods(t, env, fc, "after a replacement")
		// The watch sees the change through informers of its own, which
		// can lag the reads above: the next deletion must not reach it
		// before this change does, or it supersedes the change, which then
		// never counts.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			r := w.Report()
			assert.Greater(c, r.IPChanges, i, "replacement %d not seen in every member by the watch: %s", i+1, r.Summary())
		}, wait, tick)
	}
	require.Eventually(t, func() bool { return w.Report().Pending == 0 }, wait, tick, "changes not seen in every member: %+v", w.Report())
	r := w.Report()
	t.Logf("discovery on envtest (in-process manager, fake kubelet): %s", r.Summary())
	assert.Equal(t, 10, r.IPChanges, "each replacement gives the name a new address, seen in every member")
	assert.Equal(t, 10, r.Deletions)

	// Deleting the FederationCluster takes fedop's slices away everywhere.
	require.NoError(t, env.Host.Client.Delete(t.Context(), &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName}}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, m := range env.Members {
			var list discoveryv1.EndpointSliceList
			require.NoError(c, m.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstance: fcName}))
			assert.Empty(c, list.Items, "slices left in %s", m.Name)
		}
	}, wait, tick)
	d.assertUntouched(t)
}

// replace deletes pod name in member as a user would and waits until fedop
// has brought it back Ready.
func replace(t *testing.T, env *testenv.Federation, ns, member, name string) {
	t.Helper()
	key := member + "/" + name
	before := memberPods(t, env, ns)[key]
	require.NoError(t, env.Member(member).Client.Delete(t.Context(), &before, client.GracePeriodSeconds(0)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod, ok := memberPods(c, env, ns)[key]
		require.True(c, ok, "%s did not come back", key)
		assert.NotEqual(c, before.UID, pod.UID)
		assert.True(c, podwatch.Ready(&pod), "%s is not Ready", key)
	}, wait, tick)
}

// requireSlicesMatchPods waits until every member's slices and Services of
// fc match the pods of every member (e2e.CheckSlices).
func requireSlicesMatchPods(t *testing.T, env *testenv.Federation, fc *v1alpha1.FederationCluster, when string) {
	t.Helper()
	members := map[string]client.Reader{}
	for _, m := range env.Members {
		members[m.Name] = m.Client
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		diffs, err := e2e.CheckSlices(context.Background(), fc, members)
		require.NoError(c, err)
		assert.Empty(c, diffs)
	}, wait, tick, "slices %s", when)
}

// earlierFedopService applies, in member m, the Service fedop applied for
// component pd before it wrote slices (a selector on its pods), with what
// kube-controller-manager would have made of it, which envtest does not
// run: the EndpointSlice controller's slice, the endpoints controller's
// Endpoints object (left behind once the selector goes) and the mirroring
// controller's slice of it. All carry the Service's labels, as those
// controllers copy them.
func earlierFedopService(t *testing.T, m *testenv.Cluster, ns string) *corev1.Service {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName, v1alpha1.LabelComponent: "pd", v1alpha1.LabelMember: m.Name,
	}
	ac := corev1ac.Service("demo-pd", ns).WithLabels(labels).WithSpec(corev1ac.ServiceSpec().
		WithClusterIP(corev1.ClusterIPNone).
		WithSelector(map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName, v1alpha1.LabelComponent: "pd"}).
		WithPorts(corev1ac.ServicePort().WithName("main").WithPort(2379)).
		WithPublishNotReadyAddresses(true))
	require.NoError(t, m.Client.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager)))
	svc := &corev1.Service{}
	require.NoError(t, m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo-pd"}, svc))

	with := func(extra map[string]string) map[string]string {
		out := map[string]string{discoveryv1.LabelServiceName: "demo-pd"}
		for k, v := range labels {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	stale := []discoveryv1.Endpoint{{Addresses: []string{"10.241.200.1"}, Hostname: ptr.To("demo-pd-0")}}
	controllers := map[string]string{"demo-pd-x7k2p": "endpointslice-controller.k8s.io", "demo-pd-m1rr0": "endpointslicemirroring-controller.k8s.io"}
	for name, managedBy := range controllers {
		require.NoError(t, m.Client.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: with(map[string]string{discoveryv1.LabelManagedBy: managedBy})},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   stale,
		}))
	}
	ep := endpointsObject()
	ep.SetNamespace(ns)
	ep.SetName("demo-pd")
	ep.SetLabels(with(map[string]string{"endpoints.kubernetes.io/managed-by": "endpoint-controller"}))
	require.NoError(t, m.Client.Create(ctx, ep))
	return svc
}

// endpointsObject returns an empty v1 Endpoints object (unstructured: the
// typed API is deprecated).
func endpointsObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
	return u
}
