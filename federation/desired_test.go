package federation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

func testComponent() *v1alpha1.Component {
	return &v1alpha1.Component{
		Name: "pd",
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pd", "tier": "base"}, Annotations: map[string]string{"a": "1"}},
			Spec: corev1.PodSpec{
				NodeSelector:   map[string]string{"disk": "ssd", "topology.kubernetes.io/zone": "x"},
				InitContainers: []corev1.Container{{Name: "init", Image: "init:1", Env: []corev1.EnvVar{{Name: "MODE", Value: "base"}}}},
				Containers: []corev1.Container{
					{
						Name: "pd", Image: "pd:1", Env: []corev1.EnvVar{{Name: "MODE", Value: "base"}, {Name: "KEEP", Value: "k"}},
						Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {ContainerPort: 9999}},
					},
					{Name: "sidecar", Image: "sidecar:1"},
				},
			},
		},
	}
}

func TestEffectiveTemplate(t *testing.T) {
	c := testComponent()
	p := &v1alpha1.Placement{
		Member:       "k8s-a",
		NodeSelector: map[string]string{"topology.kubernetes.io/zone": "a"},
		Labels:       map[string]string{"tier": "hot"},
		Annotations:  map[string]string{"b": "2"},
		Env:          []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "ZONE", Value: "a"}},
		Image:        "pd:2",
	}
	got := EffectiveTemplate(c, p)

	assert.Equal(t, map[string]string{"app": "pd", "tier": "hot"}, got.Labels, "placement labels win")
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, got.Annotations)
	assert.Equal(t, map[string]string{"disk": "ssd", "topology.kubernetes.io/zone": "a"}, got.Spec.NodeSelector, "merged over the template's")
	assert.Equal(t, "pd:2", got.Spec.Containers[0].Image, "image replaces the first container's")
	assert.Equal(t, "sidecar:1", got.Spec.Containers[1].Image, "other containers keep theirs")
	assert.Equal(t, []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "KEEP", Value: "k"}, {Name: "ZONE", Value: "a"}}, got.Spec.Containers[0].Env,
		"a variable of the same name is replaced in place, a new one appended")
	assert.Equal(t, []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "ZONE", Value: "a"}}, got.Spec.InitContainers[0].Env, "init containers get env too")
	assert.Equal(t, []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "ZONE", Value: "a"}}, got.Spec.Containers[1].Env)

	// The component's template is left as it was.
	assert.Equal(t, testComponent(), c)
}

func TestRevision(t *testing.T) {
	c := testComponent()
	a := &v1alpha1.Placement{Member: "k8s-a", Replicas: 2}
	b := &v1alpha1.Placement{Member: "k8s-b", Replicas: 1}
	rev := func(c *v1alpha1.Component, p *v1alpha1.Placement) string {
		r, err := Revision(EffectiveTemplate(c, p))
		require.NoError(t, err)
		return r
	}

	ra, rb := rev(c, a), rev(c, b)
	assert.Len(t, ra, 10)
	assert.Regexp(t, "^[0-9a-f]{10}$", ra)
	assert.Equal(t, ra, rev(testComponent(), a), "deterministic")
	assert.Equal(t, ra, rb, "replicas and member name are not part of the template")

	// Changing one placement's env changes only that placement's revision.
	b.Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
	assert.Equal(t, ra, rev(c, a))
	assert.NotEqual(t, rb, rev(c, b))

	// Changing the base template changes every placement's.
	c2 := testComponent()
	c2.Template.Spec.Containers[0].Image = "pd:3"
	assert.NotEqual(t, ra, rev(c2, a))
}

func TestDesiredPodAndService(t *testing.T) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
	c := testComponent()
	c.Template.Labels[v1alpha1.LabelInstance] = "spoofed"
	p := &v1alpha1.Placement{Member: "k8s-b"}
	pod := desiredPod(fc, c, p, EffectiveTemplate(c, p), "abc", "demo-pd-3")

	assert.Equal(t, "demo-pd-3", pod.Name)
	assert.Equal(t, "db", pod.Namespace)
	assert.Equal(t, map[string]string{
		"app": "pd", "tier": "base",
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
		v1alpha1.LabelInstance:  "demo",
		v1alpha1.LabelComponent: "pd",
		v1alpha1.LabelMember:    "k8s-b",
		v1alpha1.LabelRevision:  "abc",
	}, pod.Labels, "fedop's labels win over the template's")
	assert.Equal(t, "demo-pd-3", pod.Spec.Hostname)
	assert.Equal(t, "demo-pd", pod.Spec.Subdomain)

	svc := desiredService(fc, c, "k8s-b")
	assert.Equal(t, "demo-pd", svc.Name)
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	assert.True(t, svc.Spec.PublishNotReadyAddresses)
	assert.Nil(t, svc.Spec.Selector, "fedop's EndpointSlices back it, listing every member's pods")
	assert.Equal(t, []corev1.ServicePort{{Name: "client", Port: 2379}}, svc.Spec.Ports, "only named ports")
	assert.False(t, serviceDrifted(svc, svc))
	drifted := svc.DeepCopy()
	drifted.Spec.PublishNotReadyAddresses = false
	assert.True(t, serviceDrifted(drifted, svc))
	other := svc.DeepCopy()
	other.Spec.Ports = append(other.Spec.Ports, corev1.ServicePort{Name: "peer", Port: 2380})
	assert.True(t, serviceDrifted(other, svc))
	old := svc.DeepCopy()
	old.Spec.Selector = map[string]string{v1alpha1.LabelInstance: "demo"}
	assert.True(t, serviceDrifted(old, svc), "an earlier fedop's Service with a selector")

	ac, err := applyConfiguration(svc, corev1.SchemeGroupVersion.WithKind("Service"))
	require.NoError(t, err)
	assert.NotNil(t, ac)
}

func TestClaimsOfAPod(t *testing.T) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
	c := testComponent()
	c.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "conf"}}
	c.VolumeClaimTemplates = []v1alpha1.VolumeClaimTemplate{{
		Metadata: v1alpha1.ClaimMetadata{
			Name: "data", Labels: map[string]string{v1alpha1.LabelInstance: "not-demo", "tier": "data"}, Annotations: map[string]string{"a": "1"},
		},
		Spec: v1alpha1.ClaimSpec{
			AccessModes: []string{"ReadWriteOnce"}, StorageClassName: ptr.To("standard"), VolumeMode: "Filesystem",
			Resources: v1alpha1.ClaimResources{Requests: v1alpha1.ClaimRequests{Storage: "10Gi"}},
		},
	}}
	p := &v1alpha1.Placement{Member: "k8s-a", Replicas: 1}

	pod := desiredPod(fc, c, p, EffectiveTemplate(c, p), "r1", "demo-pd-3")
	assert.Equal(t, []corev1.Volume{{Name: "conf"}, {Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-demo-pd-3"},
	}}}, pod.Spec.Volumes, "the claim replaces the template's volume of its name")

	claim, err := desiredClaim(fc, c, p, &c.VolumeClaimTemplates[0], "demo-pd-3")
	require.NoError(t, err)
	assert.Equal(t, "data-demo-pd-3", claim.Name)
	assert.Equal(t, "db", claim.Namespace)
	assert.Equal(t, map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo", v1alpha1.LabelComponent: "pd",
		v1alpha1.LabelMember: "k8s-a", v1alpha1.LabelPod: "demo-pd-3", "tier": "data",
	}, claim.Labels, "fedop's labels win")
	assert.Equal(t, map[string]string{"a": "1"}, claim.Annotations)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, claim.Spec.AccessModes)
	assert.Equal(t, "standard", *claim.Spec.StorageClassName)
	assert.Equal(t, corev1.PersistentVolumeFilesystem, *claim.Spec.VolumeMode)
	assert.Equal(t, resource.MustParse("10Gi"), claim.Spec.Resources.Requests[corev1.ResourceStorage])

	p.StorageClassName = ptr.To("fast-ssd")
	claim, err = desiredClaim(fc, c, p, &c.VolumeClaimTemplates[0], "demo-pd-3")
	require.NoError(t, err)
	assert.Equal(t, "fast-ssd", *claim.Spec.StorageClassName, "the placement's class wins")
}
