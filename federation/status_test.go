package federation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/member"
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
	pl := func(replicas, updated int32, current, update string) v1alpha1.PlacementStatus {
		return v1alpha1.PlacementStatus{Replicas: replicas, UpdatedReplicas: updated, CurrentRevision: current, UpdateRevision: update}
	}
	for _, tc := range []struct {
		name    string
		members []v1alpha1.PlacementStatus
		unknown bool
		want    v1alpha1.RolloutPhase
	}{
		{"all updated", []v1alpha1.PlacementStatus{pl(2, 2, "r2", "r2"), pl(1, 1, "r2", "r2")}, false, v1alpha1.RolloutDone},
		{"nothing updated yet", []v1alpha1.PlacementStatus{pl(2, 0, "r1", "r2"), pl(1, 0, "r1", "r2")}, false, v1alpha1.RolloutNotStarted},
		{"some updated", []v1alpha1.PlacementStatus{pl(2, 1, "r1", "r2"), pl(1, 0, "r1", "r2")}, false, v1alpha1.RolloutInProgress},
		{"one placement done, one not started", []v1alpha1.PlacementStatus{pl(2, 2, "r2", "r2"), pl(1, 0, "q1", "q2")}, false, v1alpha1.RolloutInProgress},
		{"pods missing at the update revision", []v1alpha1.PlacementStatus{pl(3, 2, "r2", "r2")}, false, v1alpha1.RolloutInProgress},
		{"a member cannot be observed", []v1alpha1.PlacementStatus{pl(2, 2, "r2", "r2")}, true, v1alpha1.RolloutUnknown},
		{"partition: the rest held back", []v1alpha1.PlacementStatus{pl(2, 1, "r1", "r2")}, false, v1alpha1.RolloutDone},
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

// TestStatusTimesAreTheAPIs: every time computeStatus stamps (an
// operation's start, a condition's transition, a member's probe) comes
// from the observation's clock and has the API's precision, so a status
// equals itself read back after its write, and a reconcile later in the
// same second finds nothing to write.
func TestStatusTimesAreTheAPIs(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1}}
	fc.Spec.Components = []v1alpha1.Component{{Name: "pd", Topology: []v1alpha1.Placement{{Member: "a", Replicas: 1}}}}
	compute := func(at time.Time) v1alpha1.FederationClusterStatus {
		members := map[string]member.State{"a": {Name: "a", Registered: true, Connected: true, Fresh: true, LastProbeTime: at}}
		s := rollout.State{Name: "demo", Now: at, Components: []rollout.Component{{Name: "pd", Placements: []rollout.Placement{
			{Member: "a", Revision: "r1", Replicas: 1, Connected: true, Fresh: true}}}}}
		return computeStatus(fc, members, s, rollout.Next(s), "test")
	}
	st := compute(now)
	second := metav1.NewTime(now.Truncate(time.Second))
	require.NotNil(t, st.Operation, "an Initialize operation starts")
	assert.Equal(t, second.UTC(), st.Operation.StartedTime.UTC())
	require.NotNil(t, st.Members[0].LastProbeTime)
	assert.Equal(t, second.UTC(), st.Members[0].LastProbeTime.UTC())
	require.NotEmpty(t, st.Conditions)
	for _, c := range st.Conditions {
		assert.Equal(t, second.UTC(), c.LastTransitionTime.UTC(), "condition %s", c.Type)
	}

	raw, err := json.Marshal(st)
	require.NoError(t, err)
	var back v1alpha1.FederationClusterStatus
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.True(t, equality.Semantic.DeepEqual(st, back), "status read back after its write: %s", diff.Diff(st, back))

	fc.Status = back
	later := compute(now.Add(300 * time.Millisecond))
	assert.True(t, equality.Semantic.DeepEqual(fc.Status, later), "a reconcile later in the same second: %s", diff.Diff(fc.Status, later))
}
