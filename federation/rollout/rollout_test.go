package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// pods returns ready pods of component c at revision rev with the given
// ordinals, each with a UID that says its name and revision.
func pods(c, rev string, ordinals ...int) []Pod {
	var out []Pod
	for _, o := range ordinals {
		name := PodName("demo", c, o)
		out = append(out, Pod{Name: name, UID: types.UID(name + "@" + rev), Ordinal: o, Revision: rev, Ready: true, ReadySince: t0.Add(-time.Hour)})
	}
	return out
}

func placement(member string, replicas int32, rev string, ps ...Pod) Placement {
	return Placement{Member: member, Replicas: replicas, Revision: rev, Connected: true, Pods: ps}
}

func state(op *v1alpha1.Operation, cs ...Component) State {
	return State{Name: "demo", Components: cs, Operation: op, Now: t0}
}

func opOf(t v1alpha1.OperationType, component, member, pod string, uid types.UID) *v1alpha1.Operation {
	return &v1alpha1.Operation{Type: t, Component: component, Member: member, Pod: pod, PodUID: uid, StartedTime: metav1.NewTime(t0.Add(-time.Minute))}
}

func names(refs []PodRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Member+"/"+r.Name)
	}
	return out
}

func TestPodNameAndOrdinal(t *testing.T) {
	assert.Equal(t, "demo-pd-12", PodName("demo", "pd", 12))
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
			got, ok := ParseOrdinal("demo", "pd", tc.pod)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNext(t *testing.T) {
	notReady := func(ps []Pod, i int) []Pod { ps[i].Ready = false; return ps }
	terminating := func(ps []Pod, i int) []Pod { ps[i].Terminating = true; return ps }
	disconnected := func(pl Placement) Placement { pl.Connected = false; return pl }

	tests := []struct {
		name        string
		state       State
		wantOp      *v1alpha1.Operation // nil: mutex free
		wantCreate  []string
		wantDelete  string // member/pod
		wantMessage string // substring
		wantAfter   time.Duration
	}{
		{
			name:        "steady state takes no operation",
			state:       state(nil, Component{Name: "pd", Placements: []Placement{placement("a", 2, "r1", pods("pd", "r1", 0, 1)...), placement("b", 1, "r1", pods("pd", "r1", 2)...)}}),
			wantMessage: "every pod is at its update revision",
		},
		{
			name: "a new federation initializes the first component's pods at once, ordinals in topology order",
			state: state(nil,
				Component{Name: "pd", Placements: []Placement{placement("a", 2, "r1"), placement("b", 1, "r1")}},
				Component{Name: "tikv", Placements: []Placement{placement("a", 1, "t1"), placement("b", 1, "t1")}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			wantCreate: []string{"a/demo-pd-0", "a/demo-pd-1", "b/demo-pd-2"},
		},
		{
			name: "initialize waits for a component to be available before the next",
			state: state(opOf(v1alpha1.OperationInitialize, "pd", "", "", ""),
				Component{Name: "pd", Placements: []Placement{placement("a", 2, "r1", notReady(pods("pd", "r1", 0, 1), 1)...)}},
				Component{Name: "tikv", Placements: []Placement{placement("a", 1, "t1")}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			wantMessage: "pod demo-pd-1 in a is not Ready",
		},
		{
			name: "initialize moves on to the next component",
			state: state(opOf(v1alpha1.OperationInitialize, "pd", "", "", ""),
				Component{Name: "pd", Placements: []Placement{placement("a", 2, "r1", pods("pd", "r1", 0, 1)...)}},
				Component{Name: "tikv", Placements: []Placement{placement("a", 1, "t1"), placement("b", 2, "t1")}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "tikv"},
			wantCreate: []string{"a/demo-tikv-0", "b/demo-tikv-1", "b/demo-tikv-2"},
		},
		{
			name: "initialize creates in connected members while one is down, and waits for it",
			state: state(nil,
				Component{Name: "pd", Placements: []Placement{placement("a", 1, "r1"), disconnected(placement("b", 1, "r1"))}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			wantCreate: []string{"a/demo-pd-0"},
		},
		{
			name: "initialize ends when every component is available",
			state: state(opOf(v1alpha1.OperationInitialize, "tikv", "", "", ""),
				Component{Name: "pd", Placements: []Placement{placement("a", 1, "r1", pods("pd", "r1", 0)...)}},
				Component{Name: "tikv", Placements: []Placement{placement("a", 1, "t1", pods("tikv", "t1", 0)...)}}),
			wantMessage: "initialized",
		},
		{
			name: "upgrade starts with the first member's highest outdated ordinal",
			state: state(nil, Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0, 1)...), placement("b", 1, "r2", pods("pd", "r1", 2)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			wantDelete: "a/demo-pd-1",
		},
		{
			name: "after a step in a, the next goes to b",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", append(pods("pd", "r1", 0), pods("pd", "r2", 1)...)...), placement("b", 1, "r2", pods("pd", "r1", 2)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			wantDelete: "b/demo-pd-2",
		},
		{
			name: "turns wrap around to the first member",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "b", "", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", append(pods("pd", "r1", 0), pods("pd", "r2", 1)...)...), placement("b", 1, "r2", pods("pd", "r2", 2)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2"},
			wantDelete: "a/demo-pd-0",
		},
		{
			name: "a member with nothing outdated is skipped",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0, 1)...), placement("b", 1, "r2", pods("pd", "r2", 2)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			wantDelete: "a/demo-pd-1",
		},
		{
			name: "components roll in spec order: the second waits for the first",
			state: state(nil,
				Component{Name: "pd", Placements: []Placement{placement("a", 1, "r2", pods("pd", "r1", 0)...)}},
				Component{Name: "tikv", Placements: []Placement{placement("a", 1, "t2", pods("tikv", "t1", 0)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2"},
			wantDelete: "a/demo-pd-0",
		},
		{
			name: "a new component starts from its first member whatever the last member was",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "", ""),
				Component{Name: "pd", Placements: []Placement{placement("a", 1, "r2", pods("pd", "r2", 0)...)}},
				Component{Name: "tikv", Placements: []Placement{placement("a", 1, "t2", pods("tikv", "t1", 0)...), placement("b", 1, "t2", pods("tikv", "t1", 1)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "tikv", Member: "a", Pod: "demo-tikv-0", PodUID: "demo-tikv-0@t1", TargetRevision: "t2"},
			wantDelete: "a/demo-tikv-0",
		},
		{
			name: "acknowledged deletion not yet observed is repeated with the same UID",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0, 1)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			wantDelete: "a/demo-pd-1",
		},
		{
			name: "the old instance terminating: wait",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", terminating(pods("pd", "r1", 0, 1), 1)...)}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			wantMessage: "demo-pd-1 in a is terminating",
		},
		{
			name: "the old instance gone: recreate it with the same name at the update revision",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			wantCreate: []string{"a/demo-pd-1"},
		},
		{
			name: "recreated even where a lower ordinal is free: a pod keeps its name",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "b", "demo-pd-2", "demo-pd-2@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r2", pods("pd", "r1", 0)...), placement("b", 1, "r2")}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			wantCreate: []string{"b/demo-pd-2"},
		},
		{
			name: "the replacement not Ready yet: wait for it",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", append(pods("pd", "r1", 0), notReady(pods("pd", "r2", 1), 0)...)...)}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			wantMessage: "demo-pd-1 in a to become available",
		},
		{
			name: "the replacement available: the step completes and the next one starts",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", append(pods("pd", "r1", 0), pods("pd", "r2", 1)...)...), placement("b", 1, "r2", pods("pd", "r1", 2)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			wantDelete: "b/demo-pd-2",
		},
		{
			name: "the last replacement available: the upgrade ends",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r2", pods("pd", "r2", 0)...)}}),
			wantMessage: "upgraded",
		},
		{
			name: "health gate: an unrelated pod not Ready blocks the next step and is named",
			state: state(nil,
				Component{Name: "pd", Placements: []Placement{placement("a", 2, "r2", pods("pd", "r1", 0, 1)...)}},
				Component{Name: "tidb", Placements: []Placement{placement("b", 1, "d1", notReady(pods("tidb", "d1", 0), 0)...)}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			wantMessage: "pod demo-tidb-0 in b is not Ready",
		},
		{
			name: "health gate: a disconnected member blocks every deletion",
			state: state(nil,
				Component{Name: "pd", Placements: []Placement{placement("a", 1, "r2", pods("pd", "r1", 0)...), disconnected(placement("b", 1, "r2", pods("pd", "r2", 1)...))}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			wantMessage: "member b is not connected",
		},
		{
			name: "an outdated pod that is already unavailable is replaced first",
			state: state(nil, Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0, 1)...), placement("b", 1, "r2", notReady(pods("pd", "r1", 2), 0)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			wantDelete: "b/demo-pd-2",
		},
		{
			name: "minReadySeconds: a Ready pod counts only after it, and the planner asks to be woken",
			state: func() State {
				s := state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"), Component{Name: "pd", Placements: []Placement{
					placement("a", 2, "r2", append(pods("pd", "r2", 0), pods("pd", "r1", 1)...)...)}})
				s.MinReady = 10 * time.Second
				s.Components[0].Placements[0].Pods[0].ReadySince = t0.Add(-4 * time.Second)
				return s
			}(),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1"},
			wantMessage: "demo-pd-0 in a to become available",
			wantAfter:   6 * time.Second,
		},
		{
			name: "paused: no deletion, and the reason says so",
			state: func() State {
				s := state(nil, Component{Name: "pd", Placements: []Placement{placement("a", 1, "r2", pods("pd", "r1", 0)...)}})
				s.Paused = true
				return s
			}(),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			wantMessage: "paused",
		},
		{
			name: "paused mid-step: the deleted pod is still recreated",
			state: func() State {
				s := state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), Component{Name: "pd", Placements: []Placement{placement("a", 2, "r2", pods("pd", "r1", 0)...)}})
				s.Paused = true
				return s
			}(),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			wantCreate: []string{"a/demo-pd-1"},
		},
		{
			name: "upgrade first creates missing pods (a replicas increase or a lost pod) before any deletion",
			state: state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0, 1)...), placement("b", 2, "r2", pods("pd", "r1", 3)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			wantCreate: []string{"b/demo-pd-2"},
		},
		{
			name: "scale-out takes the lowest free ordinal, one pod at a time",
			state: state(nil, Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r1", pods("pd", "r1", 0, 3)...), placement("b", 3, "r1", pods("pd", "r1", 4)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-1", TargetRevision: "r1"},
			wantCreate: []string{"b/demo-pd-1"},
		},
		{
			name: "scale-out waits for the new pod to be available",
			state: state(opOf(v1alpha1.OperationScale, "pd", "b", "demo-pd-1", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", pods("pd", "r1", 0)...), placement("b", 3, "r1", notReady(pods("pd", "r1", 1), 0)...)}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-1"},
			wantMessage: "demo-pd-1 in b to become available",
		},
		{
			name: "scale-in removes the highest ordinal of the placement",
			state: state(nil, Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", pods("pd", "r1", 0, 1, 4)...), placement("b", 1, "r1", pods("pd", "r1", 2)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-4", PodUID: "demo-pd-4@r1"},
			wantDelete: "a/demo-pd-4",
		},
		{
			name: "scale-in waits until the removed pod is gone, then takes the next",
			state: state(opOf(v1alpha1.OperationScale, "pd", "a", "demo-pd-4", "demo-pd-4@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", terminating(pods("pd", "r1", 0, 1, 4), 2)...)}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-4", PodUID: "demo-pd-4@r1"},
			wantMessage: "demo-pd-4 in a is terminating",
		},
		{
			name: "scale-in after the removed pod is gone",
			state: state(opOf(v1alpha1.OperationScale, "pd", "a", "demo-pd-4", "demo-pd-4@r1"), Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", pods("pd", "r1", 0, 1)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			wantDelete: "a/demo-pd-1",
		},
		{
			name: "a member removed from the topology is drained through scale-in",
			state: state(nil, Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", pods("pd", "r1", 0)...), placement("old", 0, "", pods("pd", "r0", 1)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "old", Pod: "demo-pd-1", PodUID: "demo-pd-1@r0"},
			wantDelete: "old/demo-pd-1",
		},
		{
			name: "scale waits while a member with missing pods is disconnected",
			state: state(opOf(v1alpha1.OperationScale, "pd", "", "", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", pods("pd", "r1", 0)...), disconnected(placement("b", 1, "r1"))}}),
			wantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd"},
			wantMessage: "member b is not connected",
		},
		{
			name: "a template change waits for a running scale: the new pod is created at the update revision",
			state: state(opOf(v1alpha1.OperationScale, "pd", "", "", ""), Component{Name: "pd", Placements: []Placement{
				placement("a", 2, "r2", pods("pd", "r1", 0)...)}}),
			wantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", TargetRevision: "r2"},
			wantCreate: []string{"a/demo-pd-1"},
		},
		{
			name: "a disconnected member's pods are unknown, not missing: no operation is taken",
			state: state(nil, Component{Name: "pd", Placements: []Placement{
				placement("a", 1, "r1", pods("pd", "r1", 0)...), disconnected(placement("b", 2, "r1"))}}),
			wantMessage: "every pod",
		},
		{
			name:        "an unknown operation type is dropped",
			state:       state(&v1alpha1.Operation{Type: "Rebalance"}, Component{Name: "pd", Placements: []Placement{placement("a", 1, "r1", pods("pd", "r1", 0)...)}}),
			wantMessage: "dropped unknown operation",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := Next(tc.state)
			if tc.wantOp == nil {
				assert.Nil(t, plan.Operation, "the mutex must be free")
			} else if assert.NotNil(t, plan.Operation, "the mutex must be held") {
				got := *plan.Operation
				got.StartedTime, got.Holder = metav1.Time{}, ""
				want := *tc.wantOp
				if want.TargetRevision == "" && tc.wantDelete == "" && len(tc.wantCreate) == 0 {
					got.TargetRevision = ""
				}
				assert.Equal(t, want, got)
			}
			assert.Equal(t, tc.wantCreate, names(plan.Create), "creations")
			if tc.wantDelete == "" {
				assert.Nil(t, plan.Delete, "no deletion expected")
			} else if assert.NotNil(t, plan.Delete, "a deletion expected") {
				assert.Equal(t, tc.wantDelete, plan.Delete.Member+"/"+plan.Delete.Name)
				assert.NotEmpty(t, plan.Delete.UID, "every deletion carries a UID precondition")
			}
			assert.Contains(t, plan.Message, tc.wantMessage)
			assert.Equal(t, tc.wantAfter, plan.RequeueAfter)
		})
	}
}

func TestNextKeepsStartedTimeAndInputUntouched(t *testing.T) {
	op := opOf(v1alpha1.OperationUpgrade, "pd", "a", "", "")
	s := state(op, Component{Name: "pd", Placements: []Placement{placement("a", 1, "r2", pods("pd", "r1", 0)...)}})
	plan := Next(s)
	require.NotNil(t, plan.Operation)
	assert.Equal(t, op.StartedTime, plan.Operation.StartedTime)
	assert.Empty(t, s.Operation.Pod, "the planner must not mutate its input")
	assert.NotSame(t, op, plan.Operation)
}

func TestCompletedStep(t *testing.T) {
	s := state(opOf(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"), Component{Name: "pd", Placements: []Placement{
		placement("a", 2, "r2", append(pods("pd", "r2", 0), pods("pd", "r1", 1)...)...)}})
	s.MinReady = 5 * time.Second
	plan := Next(s)
	require.NotNil(t, plan.Completed)
	assert.Equal(t, "demo-pd-0", plan.Completed.Name)
	assert.Equal(t, t0.Add(-time.Hour+5*time.Second), plan.CompletedAt)
	require.NotNil(t, plan.Delete)
	assert.Equal(t, "demo-pd-1", plan.Delete.Name)
}

func ExampleNext() {
	plan := Next(State{
		Name: "demo",
		Now:  t0,
		Components: []Component{{Name: "pd", Placements: []Placement{
			{Member: "k8s-a", Replicas: 1, Revision: "new", Connected: true, Pods: []Pod{{Name: "demo-pd-0", UID: "u0", Revision: "old", Ready: true}}},
		}}},
	})
	fmt.Println(plan.Operation.Type, plan.Delete.Name, plan.Message)
	// Output: Upgrade demo-pd-0 replacing pod demo-pd-0 in k8s-a
}
