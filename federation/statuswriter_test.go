package federation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

func TestStatusWriterUrgent(t *testing.T) {
	op := &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "u1", Holder: "m1"}
	base := func() *v1alpha1.FederationCluster {
		return &v1alpha1.FederationCluster{
			ObjectMeta: metav1.ObjectMeta{Generation: 3},
			Status: v1alpha1.FederationClusterStatus{
				ObservedGeneration: 3,
				Replicas:           3, ReadyReplicas: 3,
				Operation: op.DeepCopy(),
				Members:   []v1alpha1.MemberStatus{{Name: "a", Connected: true}},
				Components: []v1alpha1.ComponentStatus{{Name: "pd", NextOrdinal: ptr.To(int32(2)), Members: []v1alpha1.PlacementStatus{
					{Member: "a", Ordinals: "0-1"},
				}}},
				Conditions: []metav1.Condition{
					{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable},
					{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUpgrading, Message: "replacing pod demo-pd-1 in a"},
					{Type: v1alpha1.ConditionMembersConnected, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConnected},
				},
			},
		}
	}
	setCond := func(st *v1alpha1.FederationClusterStatus, typ string, status metav1.ConditionStatus, reason string) {
		for i := range st.Conditions {
			if st.Conditions[i].Type == typ {
				st.Conditions[i].Status, st.Conditions[i].Reason = status, reason
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.FederationClusterStatus)
		want   bool
	}{
		{"counts within a step", func(st *v1alpha1.FederationClusterStatus) { st.ReadyReplicas = 2 }, false},
		{"Ready flips within a step", func(st *v1alpha1.FederationClusterStatus) {
			setCond(st, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPodsUnavailable)
		}, false},
		{"the Progressing message", func(st *v1alpha1.FederationClusterStatus) {
			st.Conditions[1].Message = "waiting: pod demo-pd-1 in a to become available"
		}, false},
		{"the operation names the next pod", func(st *v1alpha1.FederationClusterStatus) { st.Operation.Pod, st.Operation.PodUID = "demo-pd-2", "u2" }, true},
		{"the operation is released", func(st *v1alpha1.FederationClusterStatus) { st.Operation = nil }, true},
		{"a new manager took the operation over", func(st *v1alpha1.FederationClusterStatus) { st.Operation.Holder = "m2" }, true},
		{"a new generation", func(st *v1alpha1.FederationClusterStatus) { st.ObservedGeneration = 4 }, true},
		{"a member disconnected", func(st *v1alpha1.FederationClusterStatus) { st.Members[0].Connected = false }, true},
		{"MembersConnected changed", func(st *v1alpha1.FederationClusterStatus) {
			setCond(st, v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected)
		}, true},
		{"an ordinal handed out", func(st *v1alpha1.FederationClusterStatus) {
			st.Components[0].NextOrdinal = ptr.To(int32(3))
			st.Components[0].Members[0].Ordinals = "0-2"
		}, true},
		{"an ordinal let go", func(st *v1alpha1.FederationClusterStatus) { st.Components[0].Members[0].Ordinals = "0" }, true},
		{"Progressing's reason within a step", func(st *v1alpha1.FederationClusterStatus) {
			setCond(st, v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonMemberSilent)
		}, false},
		{"a pod past the progress deadline", func(st *v1alpha1.FederationClusterStatus) {
			setCond(st, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := base()
			next := fc.Status.DeepCopy()
			tc.change(next)
			assert.Equal(t, tc.want, urgent(fc, next))
		})
	}

	t.Run("outside an operation Ready is reported at once", func(t *testing.T) {
		fc := base()
		fc.Status.Operation = nil
		next := fc.Status.DeepCopy()
		setCond(next, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPodsUnavailable)
		assert.True(t, urgent(fc, next))
	})
}

func TestStatusWriterWait(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	w := newStatusWriter(clocktesting.NewFakePassiveClock(t0))
	fc := &v1alpha1.FederationCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "demo"},
		Status:     v1alpha1.FederationClusterStatus{Operation: &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade}},
	}
	key := client.ObjectKeyFromObject(fc)
	next := fc.Status.DeepCopy()
	next.ReadyReplicas = 1

	assert.Zero(t, w.wait(fc, next, t0), "nothing written by this process yet: write now")
	written := fc.DeepCopy()
	written.ResourceVersion = "42"
	w.wrote(written, t0, "41")
	assert.Equal(t, statusRefresh-time.Second, w.wait(fc, next, t0.Add(time.Second)), "a non-urgent change waits for the refresh")
	assert.Zero(t, w.wait(fc, next, t0.Add(statusRefresh)), "due after the refresh")
	w.forget(key)
	assert.Zero(t, w.wait(fc, next, t0.Add(time.Second)))
}

// TestStatusWriterCurrent: a cache that still shows what this process's
// last write replaced is read as that write's result, not waited for; a
// cache that caught up, or one that long behind, is read as it is.
func TestStatusWriterCurrent(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	w := newStatusWriter(clk)
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "demo", ResourceVersion: "41"}}
	assert.Same(t, fc, w.current(fc), "nothing written yet")

	written := fc.DeepCopy()
	written.ResourceVersion = "42"
	written.Status.Operation = &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Pod: "demo-pd-0"}
	w.wrote(written, t0, "41")
	written.Status.Operation.Pod = "changed after the write"
	clk.SetTime(t0.Add(10 * time.Millisecond))
	got := w.current(fc)
	assert.Equal(t, "42", got.ResourceVersion, "the cache still shows what the write replaced: the write's result is read")
	require.NotNil(t, got.Status.Operation)
	assert.Equal(t, "demo-pd-0", got.Status.Operation.Pod, "a copy of the object as written, not the caller's")
	got.Status.Operation.Pod = "changed by a reader"
	assert.Equal(t, "demo-pd-0", w.current(fc).Status.Operation.Pod, "every reader gets its own copy")

	clk.SetTime(t0.Add(staleFor))
	assert.Same(t, fc, w.current(fc), "a cache that long behind is read as it is: a write from it conflicts")
	clk.SetTime(t0.Add(10 * time.Millisecond))
	caughtUp := fc.DeepCopy()
	caughtUp.ResourceVersion = "42"
	assert.Same(t, caughtUp, w.current(caughtUp), "the cache caught up")
}
