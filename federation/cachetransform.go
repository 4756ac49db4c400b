package federation

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// CachedObjects returns the kinds every member cache syncs before a member
// counts as connected (member.Options.Objects): those the reconciler reads
// and watches, EndpointSlices included (discovery.go).
func CachedObjects() []client.Object {
	return []client.Object{&corev1.Pod{}, &corev1.Service{}, &discoveryv1.EndpointSlice{}}
}

// TrimPod is the member caches' transform for pods (member.Options.
// Transform): it replaces a pod with a copy holding only what the
// reconciler reads, so that a cached pod costs its labels and a few
// fields rather than its whole spec and container statuses.
//
// Kept: name, namespace, UID, resourceVersion, generation, creation and
// deletion times, deletion grace period, the labels fedop reads
// (managed-by, instance, member, component, revision, and
// topology.kubernetes.io/zone: podLabels; their keys are fedop's constant
// strings), finalizers, owner
// references, spec.nodeName, each container's name and named ports (a
// hook's port may be a name: hooks.go resolves it on the pod), status
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
// A cached pod is therefore a partial view: fedop creates and deletes
// pods, never updates one from the cache, and must keep it that way.
// Objects that are not pods pass through unchanged.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:                       pod.Name,
			Namespace:                  pod.Namespace,
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
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: namedPorts(pod.Spec.Containers)},
		Status: corev1.PodStatus{
			Phase:      pod.Status.Phase,
			Conditions: readyCondition(pod.Status.Conditions),
			PodIP:      pod.Status.PodIP,
			PodIPs:     pod.Status.PodIPs,
		},
	}, nil
}

// namedPorts returns containers with only their names and named ports, or
// nil when no container has one.
func namedPorts(containers []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range containers {
		var ports []corev1.ContainerPort
		for _, p := range c.Ports {
			if p.Name != "" {
				ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort})
			}
		}
		if len(ports) > 0 {
			out = append(out, corev1.Container{Name: c.Name, Ports: ports})
		}
	}
	return out
}

// readyCondition returns the Ready condition of conditions with only its
// type, status and lastTransitionTime, or nil when there is none.
func readyCondition(conditions []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range conditions {
		if c.Type == corev1.PodReady {
			return []corev1.PodCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	return nil
}

// podLabels holds the label keys a cached pod keeps, each mapped to the
// constant with its text: the only pod labels fedop reads (the cache's
// selector and instanceSelector: managed-by, instance; observe and
// preview: member, component, revision; discovery: the zone).
var podLabels = map[string]string{
	v1alpha1.LabelManagedBy:  v1alpha1.LabelManagedBy,
	v1alpha1.LabelInstance:   v1alpha1.LabelInstance,
	v1alpha1.LabelComponent:  v1alpha1.LabelComponent,
	v1alpha1.LabelMember:     v1alpha1.LabelMember,
	v1alpha1.LabelRevision:   v1alpha1.LabelRevision,
	corev1.LabelTopologyZone: corev1.LabelTopologyZone,
}

// keptLabels returns the labels of podLabels in labels, in a new map whose
// keys, and the managed-by value, are fedop's constants rather than the
// decoded pod's copies of the same text, or nil when there are none.
// labels is not modified.
func keptLabels(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		key, ok := podLabels[k]
		if !ok {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(podLabels))
		}
		if key == v1alpha1.LabelManagedBy && v == v1alpha1.ManagedBy {
			v = v1alpha1.ManagedBy
		}
		out[key] = v
	}
	return out
}
