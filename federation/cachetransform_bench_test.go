package federation

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// benchPodsPerMember is the pods of one FederationCluster in one member in
// make bench's item 4 (1,000 pods in two placements of 500).
const benchPodsPerMember = 500

// kwokPodJSON returns pod i of a FederationCluster as a member's API
// server sends it once kwok has run it: fedop's labels and template, a
// node, the five conditions a kubelet (and kwok) sets with their times,
// IPs, a container status and managedFields. It is JSON so that every
// decoded pod owns its strings, as an informer's do.
func kwokPodJSON(tb testing.TB, i int) []byte {
	tb.Helper()
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "mem-0", Namespace: "bench"}}
	c := &v1alpha1.Component{Name: "m", Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mem-0"}, Annotations: map[string]string{"bench.fedop.io/workload": "mem-0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/fedop-bench/mem:v1",
			Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}},
		}}},
	}}
	p := &v1alpha1.Placement{Member: "k8s-a", Replicas: benchPodsPerMember}
	pod := desiredPod(fc, c, p, &c.Template, "5d8f7c9b6", fmt.Sprintf("mem-0-m-%d", i))
	t := metav1.NewTime(time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC))
	pod.UID = types.UID(fmt.Sprintf("6b1f0c2e-3a4d-4e5f-8a9b-%012d", i))
	pod.ResourceVersion = fmt.Sprint(100000 + i)
	pod.CreationTimestamp = t
	specFields := `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:app.kubernetes.io/component":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}`
	statusFields := `{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},` +
		`"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`
	pod.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "fedop-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(specFields)},
		{Manager: "kwok", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(statusFields)},
	}
	pod.Spec.NodeName = fmt.Sprintf("kwok-node-%d", i%4)
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.DNSPolicy = corev1.DNSClusterFirst
	pod.Spec.SchedulerName = corev1.DefaultSchedulerName
	pod.Spec.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
	}
	ip := fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)
	cond := func(typ corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: t}
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP: "172.18.0.3", HostIPs: []corev1.HostIP{{IP: "172.18.0.3"}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &t,
		QOSClass:  corev1.PodQOSBestEffort,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Image: "registry.example/fedop-bench/mem:v1", ImageID: "", Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
	data, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// heapAlloc returns the bytes of live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCachedPod reports the live heap one managed pod costs in a
// member cache ("B/pod"): benchPodsPerMember pods as the member's API
// server sends them, decoded, put through the member caches' transform
// (member strips managedFields, then TrimPod) and added to a client-go
// indexer with the namespace index controller-runtime's informers have.
// This is the per-pod part of make bench's item 4 (RSS per managed pod)
// that the cache holds; the garbage a reconcile makes is
// BenchmarkListPods's.
func BenchmarkCachedPod(b *testing.B) {
	raw := make([][]byte, benchPodsPerMember)
	for i := range raw {
		raw[i] = kwokPodJSON(b, i)
	}
	var perPod float64
	for b.Loop() {
		perPod = float64(cachedHeap(b, raw, func() client.Object { return &corev1.Pod{} })) / benchPodsPerMember
	}
	b.ReportMetric(perPod, "B/pod")
}

// BenchmarkListPods reports what one List of a FederationCluster's pods in
// one member's cache allocates (B/op), as observe's read makes it on every
// reconcile: benchPodsPerMember cached pods, the namespace index, the
// label selector, then the items either deep-copied (controller-runtime's
// default) or shared with the cache (UnsafeDisableDeepCopy, cacheShared).
// It redoes the steps of controller-runtime's CacheReader.List on a
// client-go indexer, since that reader is internal to controller-runtime.
func BenchmarkListPods(b *testing.B) {
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	strip := cache.TransformStripManagedFields()
	for i := range benchPodsPerMember {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(kwokPodJSON(b, i), pod); err != nil {
			b.Fatal(err)
		}
		obj, err := strip(pod)
		if err != nil {
			b.Fatal(err)
		}
		if obj, err = TrimPod(obj); err != nil {
			b.Fatal(err)
		}
		if err := store.Add(obj); err != nil {
			b.Fatal(err)
		}
	}
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "mem-0", Namespace: "bench"}}
	sel := labels.SelectorFromSet(labels.Set(instanceSelector(fc)))
	list := func(b *testing.B, deepCopy bool) {
		b.ReportAllocs()
		for b.Loop() {
			objs, err := store.ByIndex(toolscache.NamespaceIndex, fc.Namespace)
			if err != nil {
				b.Fatal(err)
			}
			items := make([]kruntime.Object, 0, len(objs))
			for _, o := range objs {
				pod := o.(*corev1.Pod)
				if !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				if deepCopy {
					items = append(items, pod.DeepCopyObject())
				} else {
					items = append(items, pod)
				}
			}
			var out corev1.PodList
			if err := apimeta.SetList(&out, items); err != nil {
				b.Fatal(err)
			}
			if len(out.Items) != benchPodsPerMember {
				b.Fatalf("listed %d pods, want %d", len(out.Items), benchPodsPerMember)
			}
		}
	}
	b.Run("deep-copy", func(b *testing.B) { list(b, true) })
	b.Run("shared", func(b *testing.B) { list(b, false) })
}

// BenchmarkComponentSlices reports what building one member's wanted
// EndpointSlices allocates (B/op), as syncMemberDiscovery does for every
// member on every reconcile: a component of benchPodsPerMember cached pods
// in each of two members, both connected.
func BenchmarkComponentSlices(b *testing.B) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "mem-0", Namespace: "bench"}}
	sources := []podsSource{{member: "k8s-a", connected: true}, {member: "k8s-b", connected: true}}
	for s := range sources {
		for i := range benchPodsPerMember {
			pod := &corev1.Pod{}
			if err := json.Unmarshal(kwokPodJSON(b, i), pod); err != nil {
				b.Fatal(err)
			}
			obj, err := TrimPod(pod)
			if err != nil {
				b.Fatal(err)
			}
			sources[s].pods = append(sources[s].pods, obj.(*corev1.Pod))
		}
	}
	ports := slicePorts([]corev1.ServicePort{{Name: "client", Port: 2379}})
	b.ReportAllocs()
	for b.Loop() {
		if got := componentSlices(fc, "m", "k8s-a", ports, sources); len(got) != 2 {
			b.Fatalf("built %d slices, want 2", len(got))
		}
	}
}

// BenchmarkCachedSlices reports the live heap the EndpointSlices cost in
// one member's cache per pod they list ("B/pod"): a component of
// benchPodsPerMember pods in each of two members, whose slices in member
// k8s-a list both members' pods (the local ones with nodeName and
// targetRef), decoded from JSON as an informer gets them.
func BenchmarkCachedSlices(b *testing.B) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "mem-0", Namespace: "bench"}}
	sources := []podsSource{{member: "k8s-a", connected: true}, {member: "k8s-b", connected: true}}
	for s := range sources {
		for i := range benchPodsPerMember {
			pod := &corev1.Pod{}
			if err := json.Unmarshal(kwokPodJSON(b, i), pod); err != nil {
				b.Fatal(err)
			}
			sources[s].pods = append(sources[s].pods, pod)
		}
	}
	var raw [][]byte
	for _, s := range componentSlices(fc, "m", "k8s-a", slicePorts([]corev1.ServicePort{{Name: "client", Port: 2379}}), sources) {
		data, err := json.Marshal(s)
		if err != nil {
			b.Fatal(err)
		}
		raw = append(raw, data)
	}
	var perPod float64
	for b.Loop() {
		perPod = float64(cachedHeap(b, raw, func() client.Object { return &discoveryv1.EndpointSlice{} })) / (2 * benchPodsPerMember)
	}
	b.ReportMetric(perPod, "B/pod")
}

// cachedHeap decodes each of raw into a fresh object of newObj, puts it
// through the member caches' transforms (managed fields stripped, then
// TrimPod) into a client-go indexer with the namespace index, and returns
// the live heap the indexer then holds, in bytes.
func cachedHeap(b *testing.B, raw [][]byte, newObj func() client.Object) int64 {
	b.Helper()
	strip := cache.TransformStripManagedFields()
	before := heapAlloc()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, data := range raw {
		obj := newObj()
		if err := json.Unmarshal(data, obj); err != nil {
			b.Fatal(err)
		}
		stripped, err := strip(obj)
		if err != nil {
			b.Fatal(err)
		}
		if stripped, err = TrimPod(stripped); err != nil {
			b.Fatal(err)
		}
		if err := store.Add(stripped); err != nil {
			b.Fatal(err)
		}
	}
	held := int64(heapAlloc()) - int64(before)
	runtime.KeepAlive(store)
	return held
}
