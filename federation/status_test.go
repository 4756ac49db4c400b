package federation

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

func TestPlacementStatus(t *testing.T) {
	rp := rollout.Placement{Member: "k8s-a", Replicas: 4, Revision: "new", Pods: []rollout.Pod{
		{Name: "p0", UID: "0", Revision: "new", Ready: true},
		{Name: "p1", UID: "1", Revision: "old", Ready: true},
		{Name: "p2", UID: "2", Revision: "old", Ready: false},
		{Name: "p3", UID: "3", Revision: "older", Ready: true},
		{Name: "p4", UID: "4", Revision: "new", Ready: true, Terminating: true},
		{Name: "p5", Revision: "new"}, // expected, not yet seen
	}}
	got := placementStatus(rp)
	assert.Equal(t, v1alpha1.PlacementStatus{
		Member: "k8s-a", Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 1,
		CurrentRevision: "old", UpdateRevision: "new",
	}, got)

	done := placementStatus(rollout.Placement{Replicas: 1, Revision: "new", Pods: []rollout.Pod{{Name: "p0", UID: "0", Revision: "new", Ready: true}}})
	assert.Equal(t, "new", done.CurrentRevision, "nothing outdated: current is the update revision")
}

func TestRolloutPhase(t *testing.T) {
	member := func(replicas, updated int32, current, update string) v1alpha1.PlacementStatus {
		return v1alpha1.PlacementStatus{Replicas: replicas, UpdatedReplicas: updated, CurrentRevision: current, UpdateRevision: update}
	}
	for _, tc := range []struct {
		name    string
		members []v1alpha1.PlacementStatus
		unknown bool
		want    v1alpha1.RolloutPhase
	}{
		{"all updated", []v1alpha1.PlacementStatus{member(2, 2, "r2", "r2"), member(1, 1, "r2", "r2")}, false, v1alpha1.RolloutDone},
		{"nothing updated yet", []v1alpha1.PlacementStatus{member(2, 0, "r1", "r2"), member(1, 0, "r1", "r2")}, false, v1alpha1.RolloutNotStarted},
		{"some updated", []v1alpha1.PlacementStatus{member(2, 1, "r1", "r2"), member(1, 0, "r1", "r2")}, false, v1alpha1.RolloutInProgress},
		{"one placement done, one not started", []v1alpha1.PlacementStatus{member(2, 2, "r2", "r2"), member(1, 0, "q1", "q2")}, false, v1alpha1.RolloutInProgress},
		{"pods missing at the update revision", []v1alpha1.PlacementStatus{member(3, 2, "r2", "r2")}, false, v1alpha1.RolloutInProgress},
		{"a member cannot be observed", []v1alpha1.PlacementStatus{member(2, 2, "r2", "r2")}, true, v1alpha1.RolloutUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := v1alpha1.ComponentStatus{Members: tc.members}
			for _, m := range tc.members {
				cs.UpdatedReplicas += m.UpdatedReplicas
			}
			assert.Equal(t, tc.want, rolloutPhase(cs, tc.unknown))
		})
	}
}
