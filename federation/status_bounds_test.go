package federation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/member"
)

// TestStatusStaysWithinItsBounds is defect 7: the largest spec the API
// admits, plus as many components and placements again being drained (a
// rename of every component, a swap of every member), must give a status
// the API accepts: within MaxItems everywhere.
func TestStatusStaysWithinItsBounds(t *testing.T) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1}}
	members := map[string]member.State{}
	var s rollout.State
	s.Name = "demo"
	for ci := range 2 * v1alpha1.MaxComponents {
		rc := rollout.Component{Name: fmt.Sprintf("c%d", ci)}
		spec := ci < v1alpha1.MaxComponents
		c := v1alpha1.Component{Name: rc.Name}
		for pi := range 2 * v1alpha1.MaxPlacements {
			m := fmt.Sprintf("m%d", pi)
			members[m] = member.State{Name: m, Registered: true, Connected: true, Fresh: true}
			rp := rollout.Placement{Member: m, Connected: true, Fresh: true,
				Pods: []rollout.Pod{{Name: rollout.PodName("demo", rc.Name, pi), UID: "u", Ordinal: pi, Ready: true}}}
			if spec && pi < v1alpha1.MaxPlacements {
				rp.Revision, rp.Replicas = "r1", 1
				c.Topology = append(c.Topology, v1alpha1.Placement{Member: m, Replicas: 1})
			}
			rc.Placements = append(rc.Placements, rp)
		}
		if spec {
			fc.Spec.Components = append(fc.Spec.Components, c)
		}
		s.Components = append(s.Components, rc)
	}
	st := computeStatus(fc, members, s, rollout.Next(s), "test")
	assert.LessOrEqual(t, len(st.Components), v1alpha1.MaxStatusComponents)
	for _, cs := range st.Components {
		assert.LessOrEqual(t, len(cs.Members), v1alpha1.MaxStatusPlacements, "placements of %s", cs.Name)
		for _, ps := range cs.Members {
			assert.LessOrEqual(t, len(ps.Ordinals), 1024)
		}
	}
	assert.LessOrEqual(t, len(st.Members), maxStatusMembers)
	assert.LessOrEqual(t, len(st.Conditions), 8)
	assert.Equal(t, fc.Spec.Components[0].Name, st.Components[0].Name, "the spec's components come first")
}

// TestLostMemberLeavesStatus is defect 8: a member that no placement names
// any more and that cannot be seen (a cluster lost for good, removed from
// the topology) leaves status, Ready becomes True, and the pods status
// last recorded there are named in a Warning Event.
func TestLostMemberLeavesStatus(t *testing.T) {
	fc, pod := upgradeFixture()
	pod.Labels[v1alpha1.LabelRevision] = mustRevision(t, fc)
	fc.Status = v1alpha1.FederationClusterStatus{
		ObservedGeneration: 1,
		Members:            []v1alpha1.MemberStatus{{Name: "k8s-a", Connected: true}, {Name: "k8s-lost", Connected: false}},
		Components: []v1alpha1.ComponentStatus{{Name: "pd", NextOrdinal: ptr.To(int32(3)), Members: []v1alpha1.PlacementStatus{
			{Member: "k8s-a", Replicas: 1, Ordinals: "0"},
			{Member: "k8s-lost", Replicas: 2, Ordinals: "1-2"},
		}}},
	}
	h := newHarness(t, fc, nil, pod)
	rec := events.NewFakeRecorder(10)
	h.r.recorder = rec

	_, err := reconcileFC(t, h, fc)
	require.NoError(t, err)
	stored := &v1alpha1.FederationCluster{}
	require.NoError(t, h.host.Get(context.Background(), client.ObjectKeyFromObject(fc), stored))
	for _, m := range stored.Status.Members {
		assert.NotEqual(t, "k8s-lost", m.Name, "the lost member is still in status")
	}
	assert.Len(t, stored.Status.Components[0].Members, 1)
	assertConditionIs(t, stored, v1alpha1.ConditionReady, metav1.ConditionTrue)
	assertConditionIs(t, stored, v1alpha1.ConditionMembersConnected, metav1.ConditionTrue)
	assert.EqualValues(t, 3, *stored.Status.Components[0].NextOrdinal, "its ordinals are never handed out again")

	var forgotten []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, EventMemberForgotten) {
			forgotten = append(forgotten, e)
		}
	}
	require.Len(t, forgotten, 1)
	assert.Contains(t, forgotten[0], "demo-pd-1, demo-pd-2")
}

func mustRevision(t *testing.T, fc *v1alpha1.FederationCluster) string {
	rev, err := Revision(EffectiveTemplate(&fc.Spec.Components[0], &fc.Spec.Components[0].Topology[0]))
	require.NoError(t, err)
	return rev
}

func assertConditionIs(t *testing.T, fc *v1alpha1.FederationCluster, typ string, status metav1.ConditionStatus) {
	t.Helper()
	for _, c := range fc.Status.Conditions {
		if c.Type == typ {
			assert.Equal(t, status, c.Status, "%s: %s: %s", typ, c.Reason, c.Message)
			return
		}
	}
	t.Errorf("no condition %s", typ)
}
