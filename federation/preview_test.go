package federation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// previewFixture is pd over k8s-a (2) and k8s-b (1), every pod Ready at
// an old revision, status recording the ordinals: an upgrade of three
// pods to come.
func previewFixture() (*v1alpha1.FederationCluster, map[string][]corev1.Pod) {
	c := testComponent()
	fc := &v1alpha1.FederationCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", Generation: 2},
		Spec: v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{{
			Name: "pd", Template: c.Template, Topology: []v1alpha1.Placement{{Member: "k8s-a", Replicas: 2}, {Member: "k8s-b", Replicas: 1}},
		}}},
		Status: v1alpha1.FederationClusterStatus{ObservedGeneration: 1, Components: []v1alpha1.ComponentStatus{{
			Name: "pd", NextOrdinal: ptr.To[int32](3),
			Members: []v1alpha1.PlacementStatus{{Member: "k8s-a", Ordinals: "0-1"}, {Member: "k8s-b", Ordinals: "2"}},
		}}},
	}
	pods := map[string][]corev1.Pod{}
	for ordinal, m := range []string{"k8s-a", "k8s-a", "k8s-b"} {
		comp := &fc.Spec.Components[0]
		p := &comp.Topology[0]
		if m == "k8s-b" {
			p = &comp.Topology[1]
		}
		name := fmt.Sprintf("demo-pd-%d", ordinal)
		pod := desiredPod(fc, comp, p, EffectiveTemplate(comp, p), "old", name)
		pod.UID = types.UID("uid-" + name)
		pod.CreationTimestamp = metav1.NewTime(time.Unix(1000, 0))
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(1000, 0))}}
		pods[m] = append(pods[m], *pod)
	}
	return fc, pods
}

// TestPlannerStateIsTheReconcilersState: what kubectl fedop plan feeds the
// planner is what the reconciler's observe feeds it for the same objects.
func TestPlannerStateIsTheReconcilersState(t *testing.T) {
	fc, pods := previewFixture()
	s := testScheme(t)
	members := fakeMembers{clusters: map[string]client.Client{}}
	for m, list := range pods {
		b := withInstanceIndex(fake.NewClientBuilder().WithScheme(s))
		for i := range list {
			b = b.WithObjects(list[i].DeepCopy())
		}
		members.clusters[m] = b.Build()
	}
	now := time.Unix(5000, 0)
	r := NewReconciler(Options{Members: members, Clock: clocktesting.NewFakeClock(now)})
	obs, err := r.observe(context.Background(), fc)
	require.NoError(t, err)
	want := r.rolloutState(fc, obs)

	got, err := PlannerState(fc, pods, now)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, rollout.Next(want), rollout.Next(got))

	// A member absent from pods is out of sight, as a disconnected one.
	delete(pods, "k8s-b")
	got, err = PlannerState(fc, pods, now)
	require.NoError(t, err)
	pl := got.Components[0].Placements[1]
	assert.Equal(t, "k8s-b", pl.Member)
	assert.False(t, pl.Connected)
	assert.False(t, pl.Fresh)
	assert.Empty(t, pl.Pods)
}

func TestPreview(t *testing.T) {
	fc, pods := previewFixture()
	s, err := PlannerState(fc, pods, time.Unix(5000, 0))
	require.NoError(t, err)
	rev := s.Components[0].Placements[0].Revision
	revB := s.Components[0].Placements[1].Revision
	steps, then := Preview(s, 100)
	up := v1alpha1.OperationUpgrade
	assert.Equal(t, []Step{
		{Operation: up, Action: ActionDelete, Component: "pd", Member: "k8s-a", Pod: "demo-pd-1", Revision: rev},
		{Operation: up, Action: ActionCreate, Component: "pd", Member: "k8s-a", Pod: "demo-pd-1", Revision: rev},
		{Operation: up, Action: ActionDelete, Component: "pd", Member: "k8s-b", Pod: "demo-pd-2", Revision: revB},
		{Operation: up, Action: ActionCreate, Component: "pd", Member: "k8s-b", Pod: "demo-pd-2", Revision: revB},
		{Operation: up, Action: ActionDelete, Component: "pd", Member: "k8s-a", Pod: "demo-pd-0", Revision: rev},
		{Operation: up, Action: ActionCreate, Component: "pd", Member: "k8s-a", Pod: "demo-pd-0", Revision: rev},
	}, steps)
	assert.Contains(t, then, "every pod is at its update revision")
	// s is not changed by the preview.
	assert.Len(t, s.Components[0].Placements[0].Pods, 2)
	assert.Equal(t, "old", s.Components[0].Placements[0].Pods[0].Revision)

	// maxSteps cuts the list.
	steps, _ = Preview(s, 2)
	assert.Len(t, steps, 2)

	// Paused: nothing, and the planner says why.
	s.Paused = true
	steps, then = Preview(s, 100)
	assert.Empty(t, steps)
	assert.Contains(t, then, "paused")

	// A drain hook: each deletion is preceded by its drain.
	s.Paused = false
	s.Components[0].Hooks = rollout.Hooks{PreDelete: true, PreDeleteTimeout: time.Minute}
	steps, _ = Preview(s, 100)
	require.Len(t, steps, 9)
	assert.Equal(t, []string{ActionDrain, ActionDelete, ActionCreate}, []string{steps[0].Action, steps[1].Action, steps[2].Action})
	assert.Equal(t, "demo-pd-1", steps[0].Pod)
}
