package federation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// revisionLength is the number of hex characters of a revision: 40 bits,
// as short as a StatefulSet's controller-revision suffix is readable.
const revisionLength = 10

// EffectiveTemplate returns the pod template of one placement: the
// component's template with the placement's overrides applied. Labels,
// annotations and the node selector are merged, the placement winning on a
// shared key; each env variable replaces the one of the same name in every
// container and init container, or is appended; image replaces the first
// container's image. The component's template is not modified.
func EffectiveTemplate(c *v1alpha1.Component, p *v1alpha1.Placement) *corev1.PodTemplateSpec {
	t := c.Template.DeepCopy()
	t.Labels = merge(t.Labels, p.Labels)
	t.Annotations = merge(t.Annotations, p.Annotations)
	t.Spec.NodeSelector = merge(t.Spec.NodeSelector, p.NodeSelector)
	for _, containers := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range containers {
			containers[i].Env = setEnv(containers[i].Env, p.Env)
		}
	}
	if p.Image != "" && len(t.Spec.Containers) > 0 {
		t.Spec.Containers[0].Image = p.Image
	}
	return t
}

func merge(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

func setEnv(env, set []corev1.EnvVar) []corev1.EnvVar {
	for _, v := range set {
		replaced := false
		for i := range env {
			if env[i].Name == v.Name {
				env[i], replaced = *v.DeepCopy(), true
			}
		}
		if !replaced {
			env = append(env, *v.DeepCopy())
		}
	}
	return env
}

// Revision returns the deterministic hash of a pod template: the first 10
// hex characters of the sha256 of its JSON encoding. encoding/json writes
// struct fields in declaration order and map keys sorted, so equal
// templates hash equally; fields left empty are omitted, so a newer API
// version that adds fields does not change the revision of existing
// templates.
func Revision(t *corev1.PodTemplateSpec) (string, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("encoding pod template: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:revisionLength], nil
}

// ServiceName is the name of component's headless Service in every member
// that hosts it: <fc>-<component>.
func ServiceName(fc *v1alpha1.FederationCluster, component string) string {
	return fc.Name + "-" + component
}

// ownedLabels are the labels of every object fedop creates for component
// of fc in member.
func ownedLabels(fc *v1alpha1.FederationCluster, component, member string) map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
		v1alpha1.LabelInstance:  fc.Name,
		v1alpha1.LabelComponent: component,
		v1alpha1.LabelMember:    member,
	}
}

// instanceSelector selects every object fedop created for fc in a member.
func instanceSelector(fc *v1alpha1.FederationCluster) client.MatchingLabels {
	return client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fc.Name}
}

// desiredPod returns pod name of component c in member p.Member, built
// from the placement's effective template t at revision rev. fedop's
// labels win over the template's. The pod's hostname and subdomain give it
// the stable DNS name <pod>.<fc>-<component>.<namespace>.svc.
func desiredPod(fc *v1alpha1.FederationCluster, c *v1alpha1.Component, p *v1alpha1.Placement, t *corev1.PodTemplateSpec, rev, name string) *corev1.Pod {
	labels := merge(t.Labels, ownedLabels(fc, c.Name, p.Member))
	labels[v1alpha1.LabelRevision] = rev
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   fc.Namespace,
			Labels:      labels,
			Annotations: t.Annotations,
		},
		Spec: *t.Spec.DeepCopy(),
	}
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = ServiceName(fc, c.Name)
	// Each claim template is a volume of the pod's name, backed by the
	// pod's own claim, as in a StatefulSet; it replaces a template volume
	// of that name.
	for _, vct := range c.VolumeClaimTemplates {
		v := corev1.Volume{Name: vct.Metadata.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(vct.Metadata.Name, name)},
		}}
		pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name })
		pod.Spec.Volumes = append(pod.Spec.Volumes, v)
	}
	return pod
}

// ClaimName is the name of the claim of template for pod:
// <template>-<pod>, as a StatefulSet names its claims.
func ClaimName(template, pod string) string {
	return template + "-" + pod
}

// claimStorageClass is the StorageClass of template's claims in placement
// p: the placement's, else the template's; nil for the member's default.
func claimStorageClass(vct *v1alpha1.VolumeClaimTemplate, p *v1alpha1.Placement) *string {
	if p != nil && p.StorageClassName != nil {
		return p.StorageClassName
	}
	return vct.Spec.StorageClassName
}

// desiredClaim returns the claim of template vct for pod (component c of
// fc, placement p), labelled like fedop's pods and with fedop.io/pod
// naming its pod.
func desiredClaim(
	fc *v1alpha1.FederationCluster, c *v1alpha1.Component, p *v1alpha1.Placement, vct *v1alpha1.VolumeClaimTemplate, pod string,
) (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(vct.Spec.Resources.Requests.Storage)
	if err != nil {
		return nil, fmt.Errorf("volumeClaimTemplate %s: storage: %w", vct.Metadata.Name, err)
	}
	labels := merge(vct.Metadata.Labels, ownedLabels(fc, c.Name, p.Member))
	labels[v1alpha1.LabelPod] = pod
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClaimName(vct.Metadata.Name, pod),
			Namespace:   fc.Namespace,
			Labels:      labels,
			Annotations: maps.Clone(vct.Metadata.Annotations),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: claimStorageClass(vct, p),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	for _, m := range vct.Spec.AccessModes {
		claim.Spec.AccessModes = append(claim.Spec.AccessModes, corev1.PersistentVolumeAccessMode(m))
	}
	if vct.Spec.VolumeMode != "" {
		mode := corev1.PersistentVolumeMode(vct.Spec.VolumeMode)
		claim.Spec.VolumeMode = &mode
	}
	return claim, nil
}

// desiredService returns component c's headless Service for member. It
// has no selector: fedop's EndpointSlices back it, listing the pods of
// every member (discovery.go). It publishes not-ready addresses so that
// pods of a stateful system find each other while they start.
func desiredService(fc *v1alpha1.FederationCluster, c *v1alpha1.Component, member string) *corev1.Service {
	var ports []corev1.ServicePort
	for _, ctr := range c.Template.Spec.Containers {
		for _, port := range ctr.Ports {
			if port.Name == "" {
				continue // a Service with several ports needs every port named
			}
			ports = append(ports, corev1.ServicePort{Name: port.Name, Port: port.ContainerPort, Protocol: port.Protocol})
		}
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServiceName(fc, c.Name),
			Namespace: fc.Namespace,
			Labels:    ownedLabels(fc, c.Name, member),
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Ports:                    ports,
			PublishNotReadyAddresses: true,
		},
	}
}

// applyConfiguration turns a typed object into a server-side apply
// configuration holding only the fields fedop sets: a typed struct would
// also send its zero values (creationTimestamp: null, an empty status) and
// claim them.
func applyConfiguration(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.ApplyConfiguration, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	u.SetGroupVersionKind(gvk)
	return client.ApplyConfigurationFromUnstructured(u), nil
}

// deletesScaledClaims reports whether c's claims go with their pods when a
// scale-in removes them (persistentVolumeClaimRetentionPolicy.whenScaled
// Delete). Without a spec (a component dropped from it) they are kept.
func deletesScaledClaims(c *v1alpha1.Component) bool {
	return c != nil && c.PersistentVolumeClaimRetentionPolicy != nil &&
		c.PersistentVolumeClaimRetentionPolicy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
}

// deletesClaimsWithFC reports whether c's claims go when the
// FederationCluster is deleted (whenDeleted Delete).
func deletesClaimsWithFC(c *v1alpha1.Component) bool {
	return c != nil && c.PersistentVolumeClaimRetentionPolicy != nil &&
		c.PersistentVolumeClaimRetentionPolicy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
}
