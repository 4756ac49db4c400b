package rollout_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/federation/rollout/rollouttest"
)

func TestPodNameAndOrdinal(t *testing.T) {
	assert.Equal(t, "demo-pd-12", rollout.PodName("demo", "pd", 12))
	for _, tc := range []struct {
		pod  string
		want int
		ok   bool
	}{
		{"demo-pd-0", 0, true},
		{"demo-pd-31999", 31999, true},
		{"demo-pd-", 0, false},
		{"demo-pd-01", 0, false},
		{"demo-pd--1", 0, false},
		{"demo-pd-x", 0, false},
		{"demo-tikv-1", 0, false},
		{"demo-pd-1-decoy", 0, false},
		{"other-pd-1", 0, false},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			got, ok := rollout.ParseOrdinal("demo", "pd", tc.pod)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNext(t *testing.T) {
	for _, tc := range rollouttest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			plan := rollout.Next(tc.State)
			if tc.WantOp == nil {
				assert.Nil(t, plan.Operation, "the mutex must be free")
			} else if assert.NotNil(t, plan.Operation, "the mutex must be held") {
				got := *plan.Operation
				got.StartedTime, got.Holder = metav1.Time{}, ""
				if in := tc.State.Operation; in != nil && in.Pod == got.Pod && in.Stage == got.Stage && in.StageStartedTime != nil {
					assert.Equal(t, in.StageStartedTime, got.StageStartedTime, "a stage keeps its start")
				} else if got.Stage != "" && assert.NotNil(t, got.StageStartedTime, "a stage has a start") {
					assert.Equal(t, tc.State.Now, got.StageStartedTime.Time, "a stage entered now starts now")
				}
				got.StageStartedTime = nil
				want := *tc.WantOp
				if want.TargetRevision == "" && tc.WantDelete == "" && len(tc.WantCreate) == 0 {
					got.TargetRevision = ""
				}
				assert.Equal(t, want, got)
			}
			assert.Equal(t, tc.WantCreate, rollouttest.Names(plan.Create), "creations")
			if tc.WantDelete == "" {
				assert.Nil(t, plan.Delete, "no deletion expected")
			} else if assert.NotNil(t, plan.Delete, "a deletion expected") {
				assert.Equal(t, tc.WantDelete, plan.Delete.Member+"/"+plan.Delete.Name)
				assert.NotEmpty(t, plan.Delete.UID, "every deletion carries a UID precondition")
			}
			assert.Contains(t, plan.Message, tc.WantMessage)
			assert.Equal(t, tc.WantAfter, plan.RequeueAfter)
			assert.Equal(t, tc.WantReplace, rollouttest.Names(plan.Replace), "failed pods replaced")
			if tc.WantStuck == "" {
				assert.Nil(t, plan.Stuck, "no pod past the progress deadline expected")
			} else if assert.NotNil(t, plan.Stuck, "a pod past the progress deadline expected") {
				assert.Equal(t, tc.WantStuck, plan.Stuck.Member+"/"+plan.Stuck.Name)
			}
			var expand []string
			for _, c := range plan.Expand {
				expand = append(expand, c.Name)
			}
			assert.Equal(t, tc.WantExpand, expand, "claims to grow")
			assert.Equal(t, tc.WantUnexpandable, plan.Unexpandable, "claims that cannot grow")
			assert.Equal(t, tc.WantDrain, refName(plan.Drain), "preDelete hook to call")
			assert.Equal(t, tc.WantUndo, refName(plan.Undo), "undo to call")
			assert.Equal(t, tc.WantCheck, rollouttest.Names(plan.Check), "postReady gates the plan depends on")
			assert.Equal(t, tc.WantHook, plan.Hook, "hook report")
			assert.Equal(t, tc.WantProceeded, plan.Proceeded, "proceeded past a timed-out hook")
			assert.Equal(t, tc.WantUndone, refName(plan.Undone), "undone")
			if plan.Drain != nil || plan.Undo != nil {
				assert.Nil(t, plan.Delete, "a hook call and a deletion never share a plan")
			}
			assertOrdinalsUnique(t, plan)
		})
	}
}

func TestNextKeepsStartedTimeAndInputUntouched(t *testing.T) {
	op := rollouttest.Op(v1alpha1.OperationUpgrade, "pd", "a", "", "")
	s := rollouttest.State(op, rollout.Component{Name: "pd", Placements: []rollout.Placement{
		rollouttest.Placement("a", 1, "r2", rollouttest.Pods("pd", "r1", 0)...)}})
	plan := rollout.Next(s)
	require.NotNil(t, plan.Operation)
	assert.Equal(t, op.StartedTime, plan.Operation.StartedTime)
	assert.Empty(t, s.Operation.Pod, "the planner must not mutate its input")
	assert.NotSame(t, op, plan.Operation)
}

func TestCompletedStep(t *testing.T) {
	op := rollouttest.Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1")
	s := rollouttest.State(op, rollout.Component{Name: "pd", Placements: []rollout.Placement{
		rollouttest.Placement("a", 2, "r2", append(rollouttest.Pods("pd", "r2", 0), rollouttest.Pods("pd", "r1", 1)...)...)}})
	s.MinReady = 5 * time.Second
	plan := rollout.Next(s)
	require.NotNil(t, plan.Completed)
	assert.Equal(t, "demo-pd-0", plan.Completed.Name)
	assert.Equal(t, rollouttest.T0.Add(-time.Hour+5*time.Second), plan.CompletedAt)
	require.NotNil(t, plan.Delete)
	assert.Equal(t, "demo-pd-1", plan.Delete.Name)
}

func ExampleNext() {
	plan := rollout.Next(rollout.State{
		Name: "demo",
		Now:  rollouttest.T0,
		Components: []rollout.Component{{Name: "pd", Placements: []rollout.Placement{
			{Member: "k8s-a", Replicas: 1, Revision: "new", Connected: true, Fresh: true,
				Pods: []rollout.Pod{{Name: "demo-pd-0", UID: "u0", Revision: "old", Ready: true}}},
		}}},
	})
	fmt.Println(plan.Operation.Type, plan.Delete.Name, plan.Message)
	// Output: Upgrade demo-pd-0 replacing pod demo-pd-0 in k8s-a
}

// assertOrdinalsUnique checks what every plan must keep true: no ordinal
// held by two placements of a component, and none at or above the next.
func assertOrdinalsUnique(t *testing.T, plan rollout.Plan) {
	t.Helper()
	for _, co := range plan.Ordinals {
		holder := map[int]string{}
		for member, set := range co.Placements {
			for _, o := range set {
				if other, ok := holder[o]; ok {
					t.Errorf("ordinal %d of %s held by %s and %s", o, co.Component, other, member)
				}
				holder[o] = member
				assert.Less(t, o, max(co.NextOrdinal, rollout.MaxOrdinal+1), "ordinal %d of %s at or above the next", o, co.Component)
			}
		}
	}
}

func TestOrdinalsFormat(t *testing.T) {
	for _, tc := range []struct {
		ordinals []int
		text     string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2}, "0-2"},
		{[]int{0, 1, 2, 5, 7, 8}, "0-2,5,7-8"},
		{[]int{3, 99999}, "3,99999"},
	} {
		assert.Equal(t, tc.text, rollout.FormatOrdinals(tc.ordinals))
		got, err := rollout.ParseOrdinals(tc.text)
		require.NoError(t, err)
		assert.Equal(t, tc.ordinals, got)
	}
	got, err := rollout.ParseOrdinals("5,1-2,2")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 5}, got, "sorted, duplicates dropped")
	for _, bad := range []string{"x", "1-", "-1", "3-1", "100000", "1,,2"} {
		_, err := rollout.ParseOrdinals(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// refName returns r as member/name, or "".
func refName(r *rollout.PodRef) string {
	if r == nil {
		return ""
	}
	return r.Member + "/" + r.Name
}
