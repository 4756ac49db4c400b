package rollouttest

import (
	"time"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// Case is one row of the planner's decision table: an observed state and
// the plan Next must return for it.
type Case struct {
	Name  string
	State rollout.State
	// WantOp is the operation the plan must hold (StartedTime and Holder
	// are not compared; TargetRevision only when the plan acts); nil: the
	// mutex must be free.
	WantOp *v1alpha1.Operation
	// WantCreate lists the creations as member/pod, in order.
	WantCreate []string
	// WantDelete is the deletion as member/pod; empty: none.
	WantDelete string
	// WantMessage is a substring of the plan's message.
	WantMessage string
	// WantAfter is the plan's RequeueAfter.
	WantAfter time.Duration
}

func notReady(ps []rollout.Pod, i int) []rollout.Pod { ps[i].Ready = false; return ps }

func terminating(ps []rollout.Pod, i int) []rollout.Pod { ps[i].Terminating = true; return ps }

func disconnected(pl rollout.Placement) rollout.Placement { pl.Connected = false; return pl }

// Cases returns the planner's decision table, fresh on every call (the
// states are not shared between callers).
func Cases() []Case {
	return []Case{
		{
			Name:        "steady state takes no operation",
			State:       State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r1", Pods("pd", "r1", 2)...)}}),
			WantMessage: "every pod is at its update revision",
		},
		{
			Name: "a new federation initializes the first component's pods at once, ordinals in topology order",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 2, "r1"), Placement("b", 1, "r1")}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t1"), Placement("b", 1, "t1")}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			WantCreate: []string{"a/demo-pd-0", "a/demo-pd-1", "b/demo-pd-2"},
		},
		{
			Name: "initialize waits for a component to be available before the next",
			State: State(Op(v1alpha1.OperationInitialize, "pd", "", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 2, "r1", notReady(Pods("pd", "r1", 0, 1), 1)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t1")}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			WantMessage: "pod demo-pd-1 in a is not Ready",
		},
		{
			Name: "initialize moves on to the next component",
			State: State(Op(v1alpha1.OperationInitialize, "pd", "", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t1"), Placement("b", 2, "t1")}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "tikv"},
			WantCreate: []string{"a/demo-tikv-0", "b/demo-tikv-1", "b/demo-tikv-2"},
		},
		{
			Name: "initialize creates in connected members while one is down, and waits for it",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r1"), disconnected(Placement("b", 1, "r1"))}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			WantCreate: []string{"a/demo-pd-0"},
		},
		{
			Name: "initialize ends when every component is available",
			State: State(Op(v1alpha1.OperationInitialize, "tikv", "", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r1", Pods("pd", "r1", 0)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t1", Pods("tikv", "t1", 0)...)}}),
			WantMessage: "initialized",
		},
		{
			Name: "upgrade starts with the first member's highest outdated ordinal",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "after a step in a, the next goes to b",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name: "turns wrap around to the first member",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "b", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r2", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2"},
			WantDelete: "a/demo-pd-0",
		},
		{
			Name: "a member with nothing outdated is skipped",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", Pods("pd", "r2", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "components roll in spec order: the second waits for the first",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r1", 0)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t2", Pods("tikv", "t1", 0)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2"},
			WantDelete: "a/demo-pd-0",
		},
		{
			Name: "a new component starts from its first member whatever the last member was",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r2", 0)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t2", Pods("tikv", "t1", 0)...), Placement("b", 1, "t2", Pods("tikv", "t1", 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "tikv", Member: "a", Pod: "demo-tikv-0", PodUID: "demo-tikv-0@t1", TargetRevision: "t2"},
			WantDelete: "a/demo-tikv-0",
		},
		{
			Name: "acknowledged deletion not yet observed is repeated with the same UID",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "the old instance terminating: wait",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", terminating(Pods("pd", "r1", 0, 1), 1)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			WantMessage: "demo-pd-1 in a is terminating",
		},
		{
			Name: "the old instance gone: recreate it with the same name at the update revision",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "recreated even where a lower ordinal is free: a pod keeps its name",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "b", "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r2", Pods("pd", "r1", 0)...), Placement("b", 1, "r2")}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			WantCreate: []string{"b/demo-pd-2"},
		},
		{
			Name: "the replacement not Ready yet: wait for it",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), notReady(Pods("pd", "r2", 1), 0)...)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			WantMessage: "demo-pd-1 in a to become available",
		},
		{
			Name: "the replacement available: the step completes and the next one starts",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name: "the last replacement available: the upgrade ends",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r2", Pods("pd", "r2", 0)...)}}),
			WantMessage: "upgraded",
		},
		{
			Name: "health gate: an unrelated pod not Ready blocks the next step and is named",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}},
				rollout.Component{Name: "tidb", Placements: []rollout.Placement{Placement("b", 1, "d1", notReady(Pods("tidb", "d1", 0), 0)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			WantMessage: "pod demo-tidb-0 in b is not Ready",
		},
		{
			Name: "health gate: a disconnected member blocks every deletion",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r1", 0)...), disconnected(Placement("b", 1, "r2", Pods("pd", "r2", 1)...))}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			WantMessage: "member b is not connected",
		},
		{
			Name: "an outdated pod that is already unavailable is replaced first",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", notReady(Pods("pd", "r1", 2), 0)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2"},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name: "minReadySeconds: a Ready pod counts only after it, and the planner asks to be woken",
			State: func() rollout.State {
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", append(Pods("pd", "r2", 0), Pods("pd", "r1", 1)...)...)}})
				s.MinReady = 10 * time.Second
				s.Components[0].Placements[0].Pods[0].ReadySince = T0.Add(-4 * time.Second)
				return s
			}(),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1"},
			WantMessage: "demo-pd-0 in a to become available",
			WantAfter:   6 * time.Second,
		},
		{
			Name: "paused: no deletion, and the reason says so",
			State: func() rollout.State {
				s := State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r1", 0)...)}})
				s.Paused = true
				return s
			}(),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			WantMessage: "paused",
		},
		{
			Name: "paused mid-step: the deleted pod is still recreated",
			State: func() rollout.State {
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 2, "r2", Pods("pd", "r1", 0)...)}})
				s.Paused = true
				return s
			}(),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2"},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "upgrade first creates missing pods (a replicas increase or a lost pod) before any deletion",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 2, "r2", Pods("pd", "r1", 3)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			WantCreate: []string{"b/demo-pd-2"},
		},
		{
			Name: "scale-out takes the lowest free ordinal, one pod at a time",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 3)...), Placement("b", 3, "r1", Pods("pd", "r1", 4)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-1", TargetRevision: "r1"},
			WantCreate: []string{"b/demo-pd-1"},
		},
		{
			Name: "scale-out waits for the new pod to be available",
			State: State(Op(v1alpha1.OperationScale, "pd", "b", "demo-pd-1", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0)...), Placement("b", 3, "r1", notReady(Pods("pd", "r1", 1), 0)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-1"},
			WantMessage: "demo-pd-1 in b to become available",
		},
		{
			Name: "scale-in removes the highest ordinal of the placement",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0, 1, 4)...), Placement("b", 1, "r1", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-4", PodUID: "demo-pd-4@r1"},
			WantDelete: "a/demo-pd-4",
		},
		{
			Name: "scale-in waits until the removed pod is gone, then takes the next",
			State: State(Op(v1alpha1.OperationScale, "pd", "a", "demo-pd-4", "demo-pd-4@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", terminating(Pods("pd", "r1", 0, 1, 4), 2)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-4", PodUID: "demo-pd-4@r1"},
			WantMessage: "demo-pd-4 in a is terminating",
		},
		{
			Name: "scale-in after the removed pod is gone",
			State: State(Op(v1alpha1.OperationScale, "pd", "a", "demo-pd-4", "demo-pd-4@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0, 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "a member removed from the topology is drained through scale-in",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0)...), Placement("old", 0, "", Pods("pd", "r0", 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "old", Pod: "demo-pd-1", PodUID: "demo-pd-1@r0"},
			WantDelete: "old/demo-pd-1",
		},
		{
			Name: "scale waits while a member with missing pods is disconnected",
			State: State(Op(v1alpha1.OperationScale, "pd", "", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0)...), disconnected(Placement("b", 1, "r1"))}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd"},
			WantMessage: "member b is not connected",
		},
		{
			Name: "a template change waits for a running scale: the new pod is created at the update revision",
			State: State(Op(v1alpha1.OperationScale, "pd", "", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", TargetRevision: "r2"},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "a disconnected member's pods are unknown, not missing: no operation is taken",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0)...), disconnected(Placement("b", 2, "r1"))}}),
			WantMessage: "every pod",
		},
		{
			// One apply that scales out, scales in and changes the image of
			// two components over two members: the scale (which creates at
			// the new revision) ends with the removal of demo-beta-1, and
			// outdated pods remain. The same reconcile takes the upgrade:
			// no outside event is needed to go on.
			Name: "a scale that ends with outdated pods goes straight on to the upgrade",
			State: State(Op(v1alpha1.OperationScale, "beta", "b", "demo-beta-1", "demo-beta-1@B1"),
				rollout.Component{Name: "alpha", Placements: []rollout.Placement{
					Placement("a", 2, "A2", Pods("alpha", "A1", 0, 1)...),
					Placement("b", 4, "A2", append(Pods("alpha", "A1", 3, 4), Pods("alpha", "A2", 5, 6)...)...)}},
				rollout.Component{Name: "beta", Placements: []rollout.Placement{
					Placement("b", 1, "B2", Pods("beta", "B1", 0)...),
					Placement("a", 2, "B2", append(Pods("beta", "B1", 2), Pods("beta", "B2", 3)...)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "alpha", Member: "a", Pod: "demo-alpha-1", PodUID: "demo-alpha-1@A1", TargetRevision: "A2"},
			WantDelete: "a/demo-alpha-1",
		},
		{
			Name: "a scale that ends with nothing else to do frees the mutex",
			State: State(Op(v1alpha1.OperationScale, "pd", "a", "demo-pd-1", "demo-pd-1@r1"),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r1", Pods("pd", "r1", 0)...)}}),
			WantMessage: "scaled",
		},
		{
			Name: "an upgrade that ends while pods are missing goes on to scale",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 1, "r2", Pods("pd", "r2", 0)...), Placement("b", 1, "r2", Pods("pd", "r2", 1, 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r2"},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name:        "an unknown operation type is dropped",
			State:       State(&v1alpha1.Operation{Type: "Rebalance"}, rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r1", Pods("pd", "r1", 0)...)}}),
			WantMessage: "dropped unknown operation",
		},
	}
}
