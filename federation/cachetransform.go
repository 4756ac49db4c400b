package federation

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/member"
)

// CachedObjects returns the kinds every member cache syncs before a member
// counts as connected (member.Options.Objects): those the reconciler reads
// and watches, EndpointSlices included (discovery.go).
func CachedObjects() []client.Object {
	return []client.Object{&corev1.Pod{}, &corev1.Service{}, &discoveryv1.EndpointSlice{}}
}

// IndexInstance is the member caches' field index of the objects fedop
// made for a FederationCluster (CachedIndexes): an object is found under
// its app.kubernetes.io/instance label, the FederationCluster's name.
const IndexInstance = "fedop.io/instance"

// CachedIndexes returns the field indexes every member cache adds
// (member.Options.IndexFields): IndexInstance, for each kind a reconcile
// lists (CachedObjects and PersistentVolumeClaims). Every reconcile lists
// its FederationCluster's objects in every member; by a label selector
// alone that matches every object of the namespace, so with N
// FederationClusters in one namespace each reconcile cost O(N) (make
// bench's item 11, 200 of them: 35% of the manager's CPU). By the index
// it costs the objects listed.
func CachedIndexes() []member.IndexField {
	kinds := append(CachedObjects(), &corev1.PersistentVolumeClaim{})
	out := make([]member.IndexField, 0, len(kinds))
	for _, obj := range kinds {
		out = append(out, member.IndexField{Object: obj, Field: IndexInstance, Extract: instanceOf})
	}
	return out
}

// instanceOf is IndexInstance's extractor. The member caches hold only
// objects fedop manages (the managed-by label: their CacheSelector), so the
// instance label is the whole key.
func instanceOf(obj client.Object) []string {
	if v := obj.GetLabels()[v1alpha1.LabelInstance]; v != "" {
		return []string{v}
	}
	return nil
}

// ofInstance selects, in a member cache, what instanceSelector selects
// for fc: by the IndexInstance index, then by the labels.
func ofInstance(fc *v1alpha1.FederationCluster) []client.ListOption {
	return []client.ListOption{client.InNamespace(fc.Namespace), client.MatchingFields{IndexInstance: fc.Name}, instanceSelector(fc)}
}

// TrimPod is the member caches' transform for pods (member.Options.
// Transform): it replaces a pod with a copy holding only what the
// reconciler reads, so that a cached pod costs its labels and a few
// fields rather than its whole spec and container statuses.
//
// Kept: name, namespace, UID, resourceVersion, generation, creation and
// deletion times, deletion grace period, the labels fedop reads
// (managed-by, instance, member, component, revision, and
// topology.kubernetes.io/zone: podLabels), finalizers, owner references,
// spec.nodeName, each container's name and named ports (a hook's port may
// be a name: hooks.go resolves it on the pod), status
// phase, the Ready condition's type, status and lastTransitionTime (the
// only condition anything reads: podwatch.ReadySince, for the planner, the step clock
// and the EndpointSlices' serving), and the pod's IPs (status.podIP and
// podIPs, which its EndpointSlices publish). Dropped: annotations, every
// other label (a template's own: no reader and no selector of fedop's uses
// them), the rest of the spec, the other conditions (PodScheduled, Initialized,
// ContainersReady, PodReadyToStartContainers: five conditions cost more
// than the rest of the status) and Ready's reason and message, container
// statuses, host IPs.
//
// What the pods of one template share is held once for all of them: the
// kept labels and the named ports (keptLabels, namedPorts), the namespace
// and node name (unique); the phase and the Ready condition's type and
// status are the API's constants, and status.podIPs[0] shares podIP's
// string (known, podIPs), so that no decoded copy of them is held. In
// make bench's pods that takes a cached pod from 2,625 to about 1,690
// bytes (BenchmarkCachedPod; 1,742 before the constants).
//
// A cached pod is therefore a partial view, parts of it shared with other
// pods: fedop creates and deletes pods, never updates one from the cache
// or modifies what it reads there (cacheShared), and must keep it that
// way. Objects that are not pods pass through unchanged.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:                       pod.Name,
			Namespace:                  unique.Make(pod.Namespace).Value(),
			UID:                        pod.UID,
			ResourceVersion:            pod.ResourceVersion,
			Generation:                 pod.Generation,
			CreationTimestamp:          pod.CreationTimestamp,
			DeletionTimestamp:          pod.DeletionTimestamp,
			DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
			Labels:                     keptLabels(pod.Labels),
			Finalizers:                 pod.Finalizers,
			OwnerReferences:            pod.OwnerReferences,
		},
		Spec: corev1.PodSpec{NodeName: unique.Make(pod.Spec.NodeName).Value(), Containers: namedPorts(pod.Spec.Containers)},
		Status: corev1.PodStatus{
			Phase:      known(pod.Status.Phase, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown),
			Conditions: readyCondition(pod.Status.Conditions),
			PodIP:      pod.Status.PodIP,
			PodIPs:     podIPs(pod.Status.PodIP, pod.Status.PodIPs),
		},
	}, nil
}

// known returns the constant among consts that equals v, or v when none
// does: a decoded string is an allocation of its own, which a cached pod
// that keeps the API's constant instead does not hold.
func known[S ~string](v S, consts ...S) S {
	for _, c := range consts {
		if v == c {
			return c
		}
	}
	return v
}

// podIPs returns ips, its first address sharing podIP's string, as the API
// makes them equal (status.podIPs[0] is status.podIP).
func podIPs(podIP string, ips []corev1.PodIP) []corev1.PodIP {
	if len(ips) == 0 || ips[0].IP != podIP {
		return ips
	}
	out := slices.Clone(ips)
	out[0].IP = podIP
	return out
}

// namedPorts returns containers with only their names and named ports, or
// nil when no container has one. Pods of one template have the same, so
// the slice is shared among the cached pods that have them (sharedPorts):
// a container, even nearly empty, costs half a kilobyte.
func namedPorts(containers []corev1.Container) []corev1.Container {
	var out []corev1.Container
	var key strings.Builder
	for _, c := range containers {
		var ports []corev1.ContainerPort
		for _, p := range c.Ports {
			if p.Name != "" {
				ports = append(ports, corev1.ContainerPort{Name: unique.Make(p.Name).Value(), ContainerPort: p.ContainerPort})
				// Container and port names never hold a control
				// character (RFC 1123 labels, IANA service names).
				fmt.Fprintf(&key, "%s\x00%s\x00%d\x00", c.Name, p.Name, p.ContainerPort)
			}
		}
		if len(ports) > 0 {
			out = append(out, corev1.Container{Name: unique.Make(c.Name).Value(), Ports: ports})
		}
	}
	if out == nil {
		return nil
	}
	return sharedPorts.get(key.String(), func() []corev1.Container { return out })
}

// readyCondition returns the Ready condition of conditions with only its
// type, status and lastTransitionTime, or nil when there is none.
func readyCondition(conditions []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range conditions {
		if c.Type == corev1.PodReady {
			status := known(c.Status, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)
			return []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	return nil
}

// podLabels are the label keys a cached pod keeps, in the order of a
// kept set's key (keptLabels): the only pod labels fedop reads (the
// cache's selector and instanceSelector: managed-by, instance; observe
// and preview: member, component, revision; discovery: the zone).
var podLabels = [...]string{
	v1alpha1.LabelManagedBy,
	v1alpha1.LabelInstance,
	v1alpha1.LabelComponent,
	v1alpha1.LabelMember,
	v1alpha1.LabelRevision,
	corev1.LabelTopologyZone,
}

// keptLabels returns the labels of podLabels in labels, or nil when there
// are none. The pods of one placement and revision (in one zone) have the
// same, so the map is shared among the cached pods that have them
// (sharedLabels): its keys are fedop's constants, its values shared
// strings. labels is not modified.
func keptLabels(labels map[string]string) map[string]string {
	var out map[string]string
	var key strings.Builder
	for i, k := range podLabels {
		if v, ok := labels[k]; ok {
			if out == nil {
				out = make(map[string]string, len(podLabels))
			}
			out[k] = unique.Make(v).Value()
			// Label values never hold a control character (they are
			// alphanumerics, '-', '_' and '.').
			fmt.Fprintf(&key, "%d\x00%s\x00", i, v)
		}
	}
	if out == nil {
		return nil
	}
	return sharedLabels.get(key.String(), func() map[string]string { return out })
}

// sharedLabels and sharedPorts hold the label sets and named ports that
// cached pods share (keptLabels, namedPorts).
var (
	sharedLabels = newInternTable[map[string]string]()
	sharedPorts  = newInternTable[[]corev1.Container]()
)

// internMax bounds an internTable's entries. A table is cleared when it is
// full: the pods cached before keep what they share, later ones share new
// copies, and entries no pod uses any more (old revisions, deleted
// FederationClusters) do not pile up.
const internMax = 1024

// internTable shares one value among the cached objects whose part it is,
// by a key that names the value's content. Values handed out are the
// cache's, shared by many objects, and never modified (cacheShared).
type internTable[V any] struct {
	// mu guards m: transforms run in every informer's goroutine.
	mu sync.Mutex
	m  map[string]V
}

func newInternTable[V any]() *internTable[V] {
	return &internTable[V]{m: map[string]V{}}
}

// get returns the value of key, made by build the first time: the value
// handed out for key before, when there is one, else build's.
func (t *internTable[V]) get(key string, build func() V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[key]; ok {
		return v
	}
	if len(t.m) >= internMax {
		clear(t.m)
	}
	v := build()
	t.m[key] = v
	return v
}
