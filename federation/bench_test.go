package federation_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
)

// benchComponent is a component shaped like the sample's TiKV: labels, one
// container with ports and an env variable, and a placement that overrides
// the node selector, env and image.
func benchComponent() (*v1alpha1.Component, *v1alpha1.Placement) {
	c := &v1alpha1.Component{
		Name: "tikv",
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo-tikv"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:  "tikv",
				Image: "pingcap/tikv:v8.5.0",
				Ports: []corev1.ContainerPort{{Name: "server", ContainerPort: 20160}, {Name: "status", ContainerPort: 20180}},
				Env:   []corev1.EnvVar{{Name: "TZ", Value: "UTC"}},
			}}},
		},
	}
	p := &v1alpha1.Placement{
		Member:       "k8s-b",
		Replicas:     3,
		NodeSelector: map[string]string{"topology.kubernetes.io/zone": "b"},
		Env:          []corev1.EnvVar{{Name: "TIKV_LABELS", Value: "zone=b"}},
		Image:        "pingcap/tikv:v8.5.1",
	}
	return c, p
}

// BenchmarkRevision measures the revision hash of one placement's
// effective template, computed for every placement on every reconcile:
// the hash alone, and with the template merge that precedes it.
func BenchmarkRevision(b *testing.B) {
	c, p := benchComponent()
	t := federation.EffectiveTemplate(c, p)
	b.Run("hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := federation.Revision(t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("effective-template+hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := federation.Revision(federation.EffectiveTemplate(c, p)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
