package federation

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

func TestTrimPod(t *testing.T) {
	now := metav1.Now()
	grace := int64(30)
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo-pd-0", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo", v1alpha1.LabelComponent: "pd",
				v1alpha1.LabelRevision: "r1", v1alpha1.LabelMember: "a", corev1.LabelTopologyZone: "z1",
				"app": "demo-pd", "team": "db",
			},
			Annotations:                map[string]string{"big": "value"},
			ManagedFields:              []metav1.ManagedFieldsEntry{{Manager: "fedop"}},
			DeletionTimestamp:          &now,
			DeletionGracePeriodSeconds: &grace,
		},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "pd", Image: "pingcap/pd:v8.5.0", Ports: []corev1.ContainerPort{
				{ContainerPort: 2379}, {Name: "hooks", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			}},
			{Name: "sidecar", Image: "busybox"},
		}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "r", Message: "m", LastProbeTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "pd"}},
			PodIP:             "10.0.0.1",
			PodIPs:            []corev1.PodIP{{IP: "10.0.0.1"}},
			HostIP:            "192.168.0.1",
		},
	}
	out, err := TrimPod(full)
	require.NoError(t, err)
	pod := out.(*corev1.Pod)

	// What observe and the planner read is kept.
	ready, since := podwatch.ReadySince(pod)
	assert.True(t, ready)
	assert.Equal(t, now.Time, since)
	// Ready alone, without its reason, message and probe time: nothing
	// reads the other conditions or those fields.
	assert.Equal(t, []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}, pod.Status.Conditions)
	assert.Len(t, full.Status.Conditions, 3, "the informer's object was modified")
	// The labels fedop reads, and no other.
	assert.Equal(t, map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo", v1alpha1.LabelComponent: "pd",
		v1alpha1.LabelRevision: "r1", v1alpha1.LabelMember: "a", corev1.LabelTopologyZone: "z1",
	}, pod.Labels)
	assert.Len(t, full.Labels, 8, "the informer's object was modified")
	sel := labels.SelectorFromSet(labels.Set(instanceSelector(&v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo"}})))
	assert.True(t, sel.Matches(labels.Set(pod.Labels)), "observe's selector still selects the cached pod")
	assert.Equal(t, []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}},
		MapObject(context.Background(), pod), "the member watches still map the pod to its FederationCluster")
	assert.Equal(t, full.UID, pod.UID)
	assert.Equal(t, full.DeletionTimestamp, pod.DeletionTimestamp)
	assert.Equal(t, "n1", pod.Spec.NodeName)
	assert.Equal(t, "10.0.0.1", pod.Status.PodIP, "the EndpointSlices publish it")
	assert.Equal(t, full.Status.PodIPs, pod.Status.PodIPs)
	// The bulk is gone, and the input is not modified.
	assert.Nil(t, pod.Annotations)
	assert.Nil(t, pod.ManagedFields)
	// Named ports only, for hooks that name their port.
	assert.Equal(t, []corev1.Container{{Name: "pd", Ports: []corev1.ContainerPort{{Name: "hooks", ContainerPort: 8080}}}}, pod.Spec.Containers)
	assert.Empty(t, pod.Status.ContainerStatuses)
	assert.Empty(t, pod.Status.HostIP)
	assert.Len(t, full.Spec.Containers, 2, "the informer's object was modified")

	// A pod without a Ready condition yet (pending) has none cached: it
	// reads as not Ready, as before.
	pending := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}}}
	out, err = TrimPod(pending)
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Pod).Status.Conditions)
	ready, _ = podwatch.ReadySince(out.(*corev1.Pod))
	assert.False(t, ready)

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	out, err = TrimPod(svc)
	require.NoError(t, err)
	assert.Same(t, svc, out, "objects that are not pods pass through")
}

// TestTrimPodShares: pods of one placement and revision share their kept
// labels and named ports; another revision gets its own; a full table
// starts again without changing what was handed out.
func TestTrimPodShares(t *testing.T) {
	pod := func(name, revision string, port int32) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo", v1alpha1.LabelComponent: "pd",
				v1alpha1.LabelRevision: revision, v1alpha1.LabelMember: "a", "app": name,
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pd", Image: "pd:" + revision,
				Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: port}, {ContainerPort: 9000}}}}},
		}
	}
	trim := func(p *corev1.Pod) *corev1.Pod {
		out, err := TrimPod(p)
		require.NoError(t, err)
		return out.(*corev1.Pod)
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}

	p0, p1 := trim(pod("demo-pd-0", "r1", 2379)), trim(pod("demo-pd-1", "r1", 2379))
	assert.True(t, same(p0.Labels, p1.Labels), "one placement and revision: one label map")
	assert.Same(t, &p0.Spec.Containers[0], &p1.Spec.Containers[0], "one template: one named-ports slice")
	assert.Equal(t, []corev1.Container{{Name: "pd", Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}}}}, p0.Spec.Containers)

	p2 := trim(pod("demo-pd-2", "r2", 2380))
	assert.False(t, same(p0.Labels, p2.Labels))
	assert.Equal(t, "r2", p2.Labels[v1alpha1.LabelRevision])
	assert.Equal(t, int32(2380), p2.Spec.Containers[0].Ports[0].ContainerPort)
	assert.Equal(t, "r1", p0.Labels[v1alpha1.LabelRevision], "what was handed out is not changed")
}

// TestTrimPodKeepsNoDecodedConstants: the phase and the Ready condition's
// type and status a cached pod keeps are the API's constants, not the
// decoded strings, and status.podIPs[0] shares status.podIP's string, so
// that a cached pod holds no allocation for them (BenchmarkCachedPod).
func TestTrimPodKeepsNoDecodedConstants(t *testing.T) {
	decoded := func(s string) string { return strings.Clone(s) }
	ip := decoded("10.0.0.7")
	pod := &corev1.Pod{Status: corev1.PodStatus{
		Phase:      corev1.PodPhase(decoded("Running")),
		Conditions: []corev1.PodCondition{{Type: corev1.PodConditionType(decoded("Ready")), Status: corev1.ConditionStatus(decoded("True"))}},
		PodIP:      ip,
		PodIPs:     []corev1.PodIP{{IP: decoded("10.0.0.7")}},
	}}
	out, err := TrimPod(pod)
	require.NoError(t, err)
	st := out.(*corev1.Pod).Status
	data := func(s string) *byte { return unsafe.StringData(s) }
	assert.Same(t, data(string(corev1.PodRunning)), data(string(st.Phase)))
	require.Len(t, st.Conditions, 1)
	assert.Same(t, data(string(corev1.PodReady)), data(string(st.Conditions[0].Type)))
	assert.Same(t, data(string(corev1.ConditionTrue)), data(string(st.Conditions[0].Status)))
	require.Len(t, st.PodIPs, 1)
	assert.Same(t, data(ip), data(st.PodIPs[0].IP))
	assert.Equal(t, "10.0.0.7", pod.Status.PodIPs[0].IP, "the decoded pod is not modified")
	assert.NotSame(t, data(ip), data(pod.Status.PodIPs[0].IP))

	other := &corev1.Pod{Status: corev1.PodStatus{Phase: "Unheard", PodIP: "10.0.0.8", PodIPs: []corev1.PodIP{{IP: "10.0.0.9"}}}}
	out, err = TrimPod(other)
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPhase("Unheard"), out.(*corev1.Pod).Status.Phase, "a phase the API does not name is kept as it is")
	assert.Equal(t, []corev1.PodIP{{IP: "10.0.0.9"}}, out.(*corev1.Pod).Status.PodIPs)
}

// TestInternTable: a key's value is built once and handed out again; a
// full table starts again, so that it never holds more than internMax
// entries, and what it handed out before stays as it was.
func TestInternTable(t *testing.T) {
	tbl := newInternTable[*int]()
	builds := 0
	get := func(i int) *int {
		return tbl.get(fmt.Sprint(i), func() *int { builds++; v := i; return &v })
	}
	first := get(0)
	assert.Same(t, first, get(0))
	assert.Equal(t, 1, builds)
	for i := 1; i < internMax; i++ {
		get(i)
	}
	assert.Len(t, tbl.m, internMax)
	get(internMax)
	assert.Len(t, tbl.m, 1, "the full table started again")
	again := get(0)
	assert.NotSame(t, first, again, "built again after the table started again")
	assert.Equal(t, 0, *first)
	assert.Equal(t, internMax+2, builds)
}

// TestCachedIndexes: every kind a reconcile lists from a member cache is
// indexed by its FederationCluster, under its instance label only.
func TestCachedIndexes(t *testing.T) {
	var kinds []string
	for _, ix := range CachedIndexes() {
		assert.Equal(t, IndexInstance, ix.Field)
		kinds = append(kinds, fmt.Sprintf("%T", ix.Object))
		obj := ix.Object.DeepCopyObject().(client.Object)
		assert.Nil(t, ix.Extract(obj), "%T without the instance label: not indexed", obj)
		obj.SetLabels(map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo"})
		assert.Equal(t, []string{"demo"}, ix.Extract(obj))
	}
	assert.ElementsMatch(t, []string{"*v1.Pod", "*v1.Service", "*v1.EndpointSlice", "*v1.PersistentVolumeClaim"}, kinds)
}
