package federation

import (
	"strings"
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
	got, held := placementStatus(rp)
	assert.Equal(t, v1alpha1.PlacementStatus{
		Member: "k8s-a", Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 1,
		CurrentRevision: "old", UpdateRevision: "new",
	}, got)
	assert.Zero(t, held, "no partition")

	done, _ := placementStatus(rollout.Placement{Replicas: 1, Revision: "new", Pods: []rollout.Pod{{Name: "p0", UID: "0", Revision: "new", Ready: true}}})
	assert.Equal(t, "new", done.CurrentRevision, "nothing outdated: current is the update revision")

	// Partition 2: ordinals 0 and 1 are held at their revision, 2 is not.
	rp = rollout.Placement{Member: "k8s-a", Replicas: 3, Revision: "new", Partition: 2, Pods: []rollout.Pod{
		{Name: "p0", UID: "0", Ordinal: 0, Revision: "old", Ready: true},
		{Name: "p1", UID: "1", Ordinal: 1, Revision: "new", Ready: true},
		{Name: "p2", UID: "2", Ordinal: 2, Revision: "old", Ready: true},
	}}
	got, held = placementStatus(rp)
	assert.Equal(t, int32(1), got.UpdatedReplicas, "updatedReplicas counts pods at the update revision")
	assert.Equal(t, 1, held, "held: p0 only (p1 is updated, p2 is above the partition)")
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
		{"partition: the rest held back", []v1alpha1.PlacementStatus{member(2, 1, "r1", "r2")}, false, v1alpha1.RolloutDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := v1alpha1.ComponentStatus{Members: tc.members}
			for _, m := range tc.members {
				cs.UpdatedReplicas += m.UpdatedReplicas
			}
			held := map[string]int{}
			if strings.HasPrefix(tc.name, "partition") {
				held[""] = 1
			}
			assert.Equal(t, tc.want, rolloutPhase(cs, tc.unknown, held))
		})
	}
}
