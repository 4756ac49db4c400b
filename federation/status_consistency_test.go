package federation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/federation/rollout/rollouttest"
	"github.com/fedop-io/fedop/member"
)

// fcOf returns a FederationCluster whose spec names the placements of s
// that have an update revision, and whose status remembers the others (a
// member dropped from a topology), with the member states s implies.
func fcOf(s rollout.State) (*v1alpha1.FederationCluster, map[string]member.State) {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Generation: 1}}
	fc.Spec.Paused = s.Paused
	members := map[string]member.State{}
	for _, rc := range s.Components {
		c := v1alpha1.Component{Name: rc.Name}
		cs := v1alpha1.ComponentStatus{Name: rc.Name}
		for _, rp := range rc.Placements {
			members[rp.Member] = member.State{Name: rp.Member, Registered: true, Connected: rp.Connected, Fresh: rp.Fresh}
			if rp.Revision != "" {
				c.Topology = append(c.Topology, v1alpha1.Placement{Member: rp.Member, Replicas: rp.Replicas})
			}
			cs.Members = append(cs.Members, v1alpha1.PlacementStatus{Member: rp.Member})
		}
		if len(c.Topology) > 0 {
			fc.Spec.Components = append(fc.Spec.Components, c)
		}
		fc.Status.Components = append(fc.Status.Components, cs)
	}
	return fc, members
}

// heldBack counts the pods of s that partitions keep below their update
// revision: live, below the partition, at another revision.
func heldBack(s rollout.State) int32 {
	var n int32
	for _, c := range s.Components {
		for _, pl := range c.Placements {
			for _, pod := range pl.Pods {
				if pod.UID != "" && !pod.Terminating && pod.Ordinal < pl.Partition && pod.Revision != pl.Revision {
					n++
				}
			}
		}
	}
	return n
}

// assertConsistent fails when st contradicts itself: Progressing False
// with reason Complete while a component's rollout is not Done or a desired
// pod is not at its update revision (but the held ones a partition keeps
// at another), or Ready True with pods not Ready.
func assertConsistent(t assert.TestingT, st v1alpha1.FederationClusterStatus, held int32) bool {
	ok := true
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c != nil && c.Reason == v1alpha1.ReasonComplete {
		ok = assert.Nil(t, st.Operation, "Complete while an operation is held") && ok
		ok = assert.Equal(t, st.Replicas, st.UpdatedReplicas+held,
			"Complete with %d of %d pods updated, %d held by a partition", st.UpdatedReplicas, st.Replicas, held) && ok
		for _, cs := range st.Components {
			ok = assert.Equal(t, v1alpha1.RolloutDone, cs.Rollout, "Complete while component %s is %s", cs.Name, cs.Rollout) && ok
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		ok = assert.GreaterOrEqual(t, st.ReadyReplicas, st.Replicas, "Ready with %d of %d pods ready", st.ReadyReplicas, st.Replicas) && ok
	}
	return ok
}

// TestStatusNeverContradictsItself computes, for every case of the
// planner's decision table, the status a reconcile would write, and checks
// that it never claims Complete with outdated pods or a rollout not Done.
func TestStatusNeverContradictsItself(t *testing.T) {
	for _, tc := range rollouttest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			fc, members := fcOf(tc.State)
			plan := rollout.Next(tc.State)
			assertConsistent(t, computeStatus(fc, members, tc.State, plan, "test"), heldBack(tc.State))
		})
	}
}

func TestProgressing(t *testing.T) {
	done := v1alpha1.FederationClusterStatus{Replicas: 2, UpdatedReplicas: 2, Components: []v1alpha1.ComponentStatus{{Name: "pd", Rollout: v1alpha1.RolloutDone}}}
	inProgress := v1alpha1.FederationClusterStatus{
		Replicas: 2, UpdatedReplicas: 1, Components: []v1alpha1.ComponentStatus{{Name: "pd", Rollout: v1alpha1.RolloutInProgress}},
	}
	upgrade := rollout.Plan{Operation: &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade}, Message: "replacing pod demo-pd-0 in a"}
	for _, tc := range []struct {
		name    string
		paused  bool
		st      v1alpha1.FederationClusterStatus
		plan    rollout.Plan
		unknown bool
		want    metav1.ConditionStatus
		reason  string
	}{
		{"nothing held, everything rolled out", false, done, rollout.Plan{}, false, metav1.ConditionFalse, v1alpha1.ReasonComplete},
		{"nothing held, pods outdated: never Complete", false, inProgress, rollout.Plan{}, false, metav1.ConditionTrue, v1alpha1.ReasonWaiting},
		{"nothing held, a member cannot be seen", false, done, rollout.Plan{}, true, metav1.ConditionUnknown, v1alpha1.ReasonMemberDisconnected},
		{"an upgrade held", false, inProgress, upgrade, false, metav1.ConditionTrue, v1alpha1.ReasonUpgrading},
		{"paused with nothing to do", true, inProgress, rollout.Plan{Operation: upgrade.Operation}, false, metav1.ConditionFalse, v1alpha1.ReasonPaused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := progressing(tc.paused, tc.st, 0, tc.plan, tc.unknown, nil, nil)
			assert.Equal(t, tc.want, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
		})
	}
}
