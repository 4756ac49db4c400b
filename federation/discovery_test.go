package federation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// discoveryPod is pod name of component pd of FederationCluster demo in
// member, at ips (none: not yet given one), Ready or not, on node n-<member>.
func discoveryPod(member, name string, ready bool, ips ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", UID: types.UID("uid-" + name), Labels: map[string]string{
			v1alpha1.LabelMember: member, v1alpha1.LabelComponent: "pd",
		}},
		Spec:   corev1.PodSpec{NodeName: "n-" + member},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, ip := range ips {
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		pod.Status.PodIP = ips[0]
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return pod
}

// ep is the endpoint componentSlices makes of a pod: ready (published),
// serving as given, in zone; local endpoints name their node and pod.
func ep(name, ip string, serving, terminating bool, zone string, local bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Hostname:   ptr.To(name),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(serving), Terminating: ptr.To(terminating)},
	}
	if zone != "" {
		e.Zone = ptr.To(zone)
	}
	if local {
		e.NodeName = ptr.To("n-" + map[string]string{"demo-pd-0": "a", "demo-pd-1": "a", "demo-pd-2": "b", "demo-pd-3": "b"}[name])
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "db", Name: name, UID: types.UID("uid-" + name)}
	}
	return e
}

func TestComponentSlices(t *testing.T) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
	ports := slicePorts([]corev1.ServicePort{{Name: "client", Port: 2379}})

	zoned := discoveryPod("a", "demo-pd-1", true, "10.241.0.2")
	zoned.Labels[corev1.LabelTopologyZone] = "a2"
	terminating := discoveryPod("b", "demo-pd-3", true, "10.242.0.4")
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	failed := discoveryPod("b", "demo-pd-3", false, "10.242.0.4")
	failed.Status.Phase = corev1.PodFailed
	lastKnown := &discoveryv1.EndpointSlice{
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{ep("demo-pd-2", "10.242.0.3", true, false, "b", true)},
	}

	for _, tc := range []struct {
		name    string
		target  string
		sources []podsSource
		// want is, by slice name, the endpoints of each slice.
		want map[string][]discoveryv1.Endpoint
	}{
		{
			name:   "pods of both members, in each member; only local pods name their node and pod",
			target: "a",
			sources: []podsSource{
				{member: "a", connected: true, zone: "a", pods: []*corev1.Pod{discoveryPod("a", "demo-pd-0", true, "10.241.0.1"), zoned}},
				{member: "b", connected: true, zone: "b", pods: []*corev1.Pod{discoveryPod("b", "demo-pd-2", false, "10.242.0.3")}},
			},
			want: map[string][]discoveryv1.Endpoint{
				"demo-pd.a.ipv4": {ep("demo-pd-0", "10.241.0.1", true, false, "a", true), ep("demo-pd-1", "10.241.0.2", true, false, "a2", true)},
				"demo-pd.b.ipv4": {ep("demo-pd-2", "10.242.0.3", false, false, "b", false)},
			},
		},
		{
			name:   "the same pods seen from the other member",
			target: "b",
			sources: []podsSource{
				{member: "a", connected: true, zone: "a", pods: []*corev1.Pod{discoveryPod("a", "demo-pd-0", true, "10.241.0.1")}},
				{member: "b", connected: true, zone: "b", pods: []*corev1.Pod{discoveryPod("b", "demo-pd-2", false, "10.242.0.3")}},
			},
			want: map[string][]discoveryv1.Endpoint{
				"demo-pd.a.ipv4": {ep("demo-pd-0", "10.241.0.1", true, false, "a", false)},
				"demo-pd.b.ipv4": {ep("demo-pd-2", "10.242.0.3", false, false, "b", true)},
			},
		},
		{
			name:   "no IP yet, finished, or not fedop's name: not published; a member with nothing to publish has no slice",
			target: "a",
			sources: []podsSource{
				{member: "a", connected: true, pods: []*corev1.Pod{discoveryPod("a", "demo-pd-0", false), discoveryPod("a", "demo-pd-x", true, "10.241.0.9")}},
				{member: "b", connected: true, pods: []*corev1.Pod{failed, discoveryPod("b", "demo-pd-2", true, "10.242.0.3")}},
			},
			want: map[string][]discoveryv1.Endpoint{
				"demo-pd.b.ipv4": {ep("demo-pd-2", "10.242.0.3", true, false, "", false)},
			},
		},
		{
			name:   "a terminating pod is published, marked terminating; a removed pod is gone",
			target: "a",
			sources: []podsSource{
				{member: "a", connected: true, zone: "a"},
				{member: "b", connected: true, zone: "b", pods: []*corev1.Pod{terminating}},
			},
			want: map[string][]discoveryv1.Endpoint{
				"demo-pd.b.ipv4": {ep("demo-pd-3", "10.242.0.4", true, true, "b", false)},
			},
		},
		{
			name:   "dual stack: one slice per family",
			target: "a",
			sources: []podsSource{
				{member: "b", connected: true, pods: []*corev1.Pod{discoveryPod("b", "demo-pd-2", true, "10.242.0.3", "fd00::3")}},
			},
			want: map[string][]discoveryv1.Endpoint{
				"demo-pd.b.ipv4": {ep("demo-pd-2", "10.242.0.3", true, false, "", false)},
				"demo-pd.b.ipv6": {ep("demo-pd-2", "fd00::3", true, false, "", false)},
			},
		},
		{
			name:   "a disconnected member's pods keep their last known record, not serving",
			target: "a",
			sources: []podsSource{
				{member: "a", connected: true, zone: "a", pods: []*corev1.Pod{discoveryPod("a", "demo-pd-0", true, "10.241.0.1")}},
				{member: "b", lastKnown: []*discoveryv1.EndpointSlice{lastKnown}},
			},
			want: map[string][]discoveryv1.Endpoint{
				"demo-pd.a.ipv4": {ep("demo-pd-0", "10.241.0.1", true, false, "a", true)},
				"demo-pd.b.ipv4": {ep("demo-pd-2", "10.242.0.3", false, false, "b", false)},
			},
		},
		{
			name:    "a disconnected member with no record has no slice",
			target:  "a",
			sources: []podsSource{{member: "b"}},
			want:    map[string][]discoveryv1.Endpoint{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string][]discoveryv1.Endpoint{}
			for _, s := range componentSlices(fc, "pd", tc.target, ports, tc.sources) {
				got[s.Name] = s.Endpoints
				assert.Equal(t, "db", s.Namespace)
				assert.Equal(t, ports, s.Ports)
				assert.Equal(t, map[string]string{
					v1alpha1.LabelManagedBy:      v1alpha1.ManagedBy,
					v1alpha1.LabelInstance:       "demo",
					v1alpha1.LabelComponent:      "pd",
					v1alpha1.LabelMember:         tc.target,
					v1alpha1.LabelPodsMember:     s.Labels[v1alpha1.LabelPodsMember],
					discoveryv1.LabelServiceName: "demo-pd",
					discoveryv1.LabelManagedBy:   v1alpha1.EndpointSliceManagedBy,
					corev1.IsHeadlessService:     "",
				}, s.Labels, "labels of %s", s.Name)
				assert.Equal(t, SliceName(fc, "pd", s.Labels[v1alpha1.LabelPodsMember], s.AddressType, 0), s.Name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, ptr.To(true), lastKnown.Endpoints[0].Conditions.Serving, "the cached slice was modified")
}

func TestComponentSlicesSplitAtTheAPIBound(t *testing.T) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
	var pods []*corev1.Pod
	for i := range maxSliceEndpoints + 1 {
		pods = append(pods, discoveryPod("b", fmt.Sprintf("demo-pd-%d", i), true, fmt.Sprintf("10.242.%d.%d", i/250, i%250+1)))
	}
	got := componentSlices(fc, "pd", "a", nil, []podsSource{{member: "b", connected: true, pods: pods}})
	require.Len(t, got, 2)
	assert.Equal(t, "demo-pd.b.ipv4", got[0].Name)
	assert.Equal(t, "demo-pd.b.ipv4-1", got[1].Name)
	assert.Len(t, got[0].Endpoints, maxSliceEndpoints)
	assert.Len(t, got[1].Endpoints, 1)
}

// TestSliceDrifted checks that a slice as the API server returns it (a
// round trip through the unstructured form fedop applies) is not drifted,
// and that each field fedop writes is compared.
func TestSliceDrifted(t *testing.T) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
	want := componentSlices(fc, "pd", "a", slicePorts([]corev1.ServicePort{{Name: "client", Port: 2379}}), []podsSource{
		{member: "a", connected: true, zone: "a", pods: []*corev1.Pod{discoveryPod("a", "demo-pd-0", true, "10.241.0.1")}},
	})[0]
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	require.NoError(t, err)
	have := &discoveryv1.EndpointSlice{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, have))
	have.Labels["someone-else"] = "x"
	assert.False(t, sliceDrifted(have, want), "round trip, and a label of someone else's")

	for name, edit := range map[string]func(*discoveryv1.EndpointSlice){
		"address":   func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"10.241.0.9"} },
		"serving":   func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Serving = ptr.To(false) },
		"endpoints": func(s *discoveryv1.EndpointSlice) { s.Endpoints = nil },
		"ports":     func(s *discoveryv1.EndpointSlice) { s.Ports = nil },
		"label":     func(s *discoveryv1.EndpointSlice) { delete(s.Labels, corev1.IsHeadlessService) },
		"managedBy": func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelManagedBy] = "someone" },
	} {
		drifted := have.DeepCopy()
		edit(drifted)
		assert.True(t, sliceDrifted(drifted, want), name)
	}
}

// TestDeleteForeignSlices: once fedop's Service has no selector, the slices
// kube-controller-manager made for it go (the EndpointSlice controller's,
// and the mirroring controller's with the Endpoints object they mirror);
// fedop's own, other Services' and another controller's Endpoints stay.
func TestDeleteForeignSlices(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "demo-pd", Labels: map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo",
	}}}
	slice := func(name, service, managedBy string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, UID: types.UID(name), Labels: map[string]string{
				discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: managedBy,
			}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
	}
	controllers := slice("demo-pd-abcde", "demo-pd", "endpointslice-controller.k8s.io")
	mirrored := slice("demo-pd-fghij", "demo-pd", mirroringController)
	ours := slice("demo-pd.a.ipv4", "demo-pd", v1alpha1.EndpointSliceManagedBy)
	otherService := slice("demo-tikv-abcde", "demo-tikv", "endpointslice-controller.k8s.io")
	// v1 Endpoints, as fedop reads it: metadata only (the typed API is
	// deprecated).
	endpoints := &unstructured.Unstructured{}
	endpoints.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
	endpoints.SetNamespace("db")
	endpoints.SetName("demo-pd")
	endpoints.SetUID("ep")
	endpoints.SetLabels(map[string]string{
		labelEndpointsManagedBy: endpointsController, v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo",
	})

	cached := []*discoveryv1.EndpointSlice{controllers, mirrored, ours, otherService}
	withSelector := svc.DeepCopy()
	withSelector.Spec.Selector = map[string]string{v1alpha1.LabelInstance: "demo"}
	assert.Empty(t, foreignSlices(cached, withSelector), "while the Service has a selector, its controller's slices are current")
	foreign := foreignSlices(cached, svc)
	assert.ElementsMatch(t, []*discoveryv1.EndpointSlice{controllers, mirrored}, foreign)

	c := fake.NewClientBuilder().WithScheme(s).WithObjects(controllers, mirrored, ours, otherService, endpoints).Build()
	n, err := deleteForeignSlices(t.Context(), c, c, foreign, svc)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "two slices and the Endpoints object")
	for _, gone := range []client.Object{controllers, mirrored, endpoints} {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(gone), gone.DeepCopyObject().(client.Object))
		assert.True(t, apierrors.IsNotFound(err), "%s was not deleted", gone.GetName())
	}
	for _, kept := range []client.Object{ours, otherService} {
		assert.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(kept), &discoveryv1.EndpointSlice{}), "%s was deleted", kept.GetName())
	}

	// Endpoints of the Service's name that the endpoints controller did not
	// make are not fedop's to delete.
	notControllers := endpoints.DeepCopy()
	notControllers.SetLabels(map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo"})
	notControllers.SetResourceVersion("")
	mirrored.ResourceVersion = ""
	c = fake.NewClientBuilder().WithScheme(s).WithObjects(mirrored, notControllers).Build()
	n, err = deleteForeignSlices(t.Context(), c, c, []*discoveryv1.EndpointSlice{mirrored}, svc)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(notControllers), notControllers.DeepCopy()))
}
