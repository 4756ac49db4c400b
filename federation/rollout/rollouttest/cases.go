package rollouttest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// WantReplace lists the failed pods to replace as member/pod.
	WantReplace []string
	// WantStuck is the pod past the progress deadline as member/pod.
	WantStuck string
	// WantExpand lists the claims to grow.
	WantExpand []string
	// WantUnexpandable lists the claims that cannot grow.
	WantUnexpandable []string
	// WantDrain and WantUndo are the pods whose preDelete hook or undo is
	// to be called, as member/pod; WantCheck the pods whose postReady gate
	// the plan depends on.
	WantDrain, WantUndo string
	WantCheck           []string
	// WantHook is the plan's hook report (a condition reason).
	WantHook string
	// WantProceeded: a timed-out preDelete hook is passed over.
	WantProceeded bool
	// WantUndone is the pod whose called-off step was undone.
	WantUndone string
}

func notReady(ps []rollout.Pod, i int) []rollout.Pod { ps[i].Ready = false; return ps }

func terminating(ps []rollout.Pod, i int) []rollout.Pod { ps[i].Terminating = true; return ps }

func failed(ps []rollout.Pod, i int) []rollout.Pod {
	ps[i].Failed, ps[i].Ready = true, false
	return ps
}

// created sets every pod's creation time, and makes a not Ready pod's
// Ready condition as old.
func created(ps []rollout.Pod, at time.Time) []rollout.Pod {
	for i := range ps {
		ps[i].Created = at
		if !ps[i].Ready {
			ps[i].ReadySince = at
		}
	}
	return ps
}

// retained is pl with claims kept for ordinals.
func retained(pl rollout.Placement, ordinals ...int) rollout.Placement {
	pl.Retained = append(pl.Retained, ordinals...)
	return pl
}

// claims gives every pod a claim data-<pod> with these sizes.
func claims(ps []rollout.Pod, requested, capacity, desired int64, expandable bool) []rollout.Pod {
	for i := range ps {
		ps[i].Claims = []rollout.Claim{{Name: "data-" + ps[i].Name, Requested: requested, Capacity: capacity, Desired: desired, Expandable: expandable}}
	}
	return ps
}

// stale is pl in a member that has not answered within the freshness
// bound: still connected, its pods as last seen.
func stale(pl rollout.Placement) rollout.Placement { pl.Fresh = false; return pl }

// disconnected is pl out of sight: not connected, and its pods unknown
// (the planner is never shown a disconnected member's pods; what it holds
// is in Ordinals).
func disconnected(pl rollout.Placement) rollout.Placement {
	for _, pod := range pl.Pods {
		pl.Ordinals = append(pl.Ordinals, pod.Ordinal)
	}
	pl.Connected, pl.Fresh, pl.Pods = false, false, nil
	return pl
}

// hooked is c with hooks h.
func hooked(c rollout.Component, h rollout.Hooks) rollout.Component { c.Hooks = h; return c }

// withNext returns op with nextPod and nextPodUID recorded.
func withNext(op *v1alpha1.Operation, pod string, uid types.UID) *v1alpha1.Operation {
	op.NextPod, op.NextPodUID = pod, uid
	return op
}

// drainHooks: a preDelete hook with an undo, 2 minutes, Halt.
var drainHooks = rollout.Hooks{PreDelete: true, Undo: true, PreDeleteTimeout: 2 * time.Minute}

// gateHooks: a postReady gate of scope Pod, 5 minutes.
var gateHooks = rollout.Hooks{PostReady: true, PostReadyTimeout: 5 * time.Minute}

// staged is op in stage since d before T0.
func staged(op *v1alpha1.Operation, stage v1alpha1.StepStage, d time.Duration) *v1alpha1.Operation {
	t := metav1.NewTime(T0.Add(-d))
	op.Stage, op.StageStartedTime = stage, &t
	return op
}

// calling is s with the hook answers c.
func calling(s rollout.State, c rollout.Calls) rollout.State { s.Calls = c; return s }

// at is s planned at now.
func at(now time.Time, s rollout.State) rollout.State { s.Now = now; return s }

// paused is s with the FederationCluster paused.
func paused(s rollout.State) rollout.State { s.Paused = true; return s }

// released is s with a release of its operation asked for.
func released(s rollout.State) rollout.State { s.Release = true; return s }

// healthy answers the gate of every pod in keys with why ("" passes).
func healthy(why string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = why
	}
	return out
}

// partitioned is pl with the component's partition.
func partitioned(pl rollout.Placement, partition int) rollout.Placement {
	pl.Partition = partition
	return pl
}

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
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "after a step in a, the next goes to b",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name: "turns wrap around to the first member",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "b", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r2", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting},
			WantDelete: "a/demo-pd-0",
		},
		{
			Name: "a member with nothing outdated is skipped",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", Pods("pd", "r2", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "components roll in spec order: the second waits for the first",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r1", 0)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t2", Pods("tikv", "t1", 0)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-tikv-0", NextPodUID: "demo-tikv-0@t1"},
			WantDelete: "a/demo-pd-0",
		},
		{
			Name: "a new component starts from its first member whatever the last member was",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r2", 0)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t2", Pods("tikv", "t1", 0)...), Placement("b", 1, "t2", Pods("tikv", "t1", 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "tikv", Member: "a", Pod: "demo-tikv-0", PodUID: "demo-tikv-0@t1", TargetRevision: "t2", Stage: v1alpha1.StageDeleting, NextPod: "demo-tikv-1", NextPodUID: "demo-tikv-1@t1"},
			WantDelete: "a/demo-tikv-0",
		},
		{
			Name: "acknowledged deletion not yet observed is repeated with the same UID",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
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
				Holding(Placement("a", 2, "r2", Pods("pd", "r1", 0)...), 0, 1)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "recreated even where a lower ordinal is free: a pod keeps its name",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "b", "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r2", Pods("pd", "r1", 0)...), Holding(Placement("b", 1, "r2"), 2)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantCreate: []string{"b/demo-pd-2"},
		},
		{
			Name: "the replacement not Ready yet: wait for it",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), notReady(Pods("pd", "r2", 1), 0)...)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantMessage: "demo-pd-1 in a to become available",
		},
		{
			Name: "the replacement not Ready yet, the next victim in the next component: it is recorded as nextPod",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-0", "demo-pd-0@r1"),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", notReady(Pods("pd", "r2", 0), 0)...)}},
				rollout.Component{Name: "tikv", Placements: []rollout.Placement{Placement("a", 1, "t2", Pods("tikv", "t1", 0)...), Placement("b", 1, "t2", Pods("tikv", "t1", 1)...)}}),
			WantOp: &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", Stage: v1alpha1.StageWaitingReady,
				NextPod: "demo-tikv-0", NextPodUID: "demo-tikv-0@t1"},
			WantMessage: "demo-pd-0 in a to become available",
		},
		{
			Name: "the replacement not Ready yet, the next victim's component drains first: no nextPod",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), notReady(Pods("pd", "r2", 1), 0)...)...)}}, drainHooks)),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageWaitingReady},
			WantMessage: "demo-pd-1 in a to become available",
		},
		{
			Name: "the replacement available, nextPod recorded: that step begins and records the one after it",
			State: State(withNext(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name: "nextPod deleted before status recorded its step: that step goes on, and the member turns follow it",
			State: State(withNext(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Holding(Placement("b", 1, "r2"), 2)}}),
			WantOp: &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageWaitingReady,
				NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantCreate: []string{"b/demo-pd-2"},
		},
		{
			Name: "nextPod's replacement already Ready, status still on the step before: both complete, the turns go on from nextPod's member",
			State: State(withNext(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), "demo-pd-3", "demo-pd-3@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 2, "r2", append(Pods("pd", "r1", 2), Pods("pd", "r2", 3)...)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantDelete: "a/demo-pd-0",
		},
		{
			Name: "the replacement available: the step completes and the next one starts",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
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
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-1", NextPodUID: "demo-pd-1@r1"},
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
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-1", NextPodUID: "demo-pd-1@r1"},
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
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{Holding(Placement("a", 2, "r2", Pods("pd", "r1", 0)...), 0, 1)}})
				s.Paused = true
				return s
			}(),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "upgrade first creates missing pods (a lost pod under its name, a replicas increase at a new ordinal) before any deletion",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 3, "r2", Pods("pd", "r1", 0, 1)...), Holding(Placement("b", 2, "r2", Pods("pd", "r1", 3)...), 2, 3)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			WantCreate: []string{"a/demo-pd-4", "b/demo-pd-2"},
		},
		{
			// Ordinals below the next are never handed out again: a member
			// out of sight, or a claim kept by a scale-in, may still hold
			// them.
			Name: "scale-out takes a new ordinal, one pod at a time",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: 5, Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 3)...), Placement("b", 3, "r1", Pods("pd", "r1", 4)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-5", TargetRevision: "r1", Stage: v1alpha1.StageWaitingReady},
			WantCreate: []string{"b/demo-pd-5"},
		},
		{
			Name: "scale-out waits for the new pod to be available",
			State: State(Op(v1alpha1.OperationScale, "pd", "b", "demo-pd-1", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0)...), Placement("b", 3, "r1", notReady(Pods("pd", "r1", 1), 0)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-1", Stage: v1alpha1.StageWaitingReady},
			WantMessage: "demo-pd-1 in b to become available",
		},
		{
			Name: "scale-in removes the highest ordinal of the placement",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0, 1, 4)...), Placement("b", 1, "r1", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-4", PodUID: "demo-pd-4@r1", Stage: v1alpha1.StageDeleting},
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
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDeleting},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "a member removed from the topology is drained through scale-in",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", Pods("pd", "r1", 0)...), Placement("old", 0, "", Pods("pd", "r0", 1)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "old", Pod: "demo-pd-1", PodUID: "demo-pd-1@r0", Stage: v1alpha1.StageDeleting},
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
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", TargetRevision: "r2", Stage: v1alpha1.StageWaitingReady},
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
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "alpha", Member: "a", Pod: "demo-alpha-1", PodUID: "demo-alpha-1@A1", TargetRevision: "A2", Stage: v1alpha1.StageDeleting, NextPod: "demo-alpha-4", NextPodUID: "demo-alpha-4@A1"},
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
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r2", Stage: v1alpha1.StageDeleting},
			WantDelete: "b/demo-pd-2",
		},
		// --- Safe steps, defect 1: a recorded deletion is taken again only
		// if it passes the checks of a new step; otherwise it is dropped.
		{
			Name: "replay: a recorded deletion is dropped while another pod is unavailable",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", notReady(Pods("pd", "r1", 2), 0)...)}}),
			// Dropped, it is planned again: the pod that is down already
			// is replaced first, which costs no availability.
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-1", NextPodUID: "demo-pd-1@r1"},
			WantDelete:  "b/demo-pd-2",
			WantMessage: "step on pod demo-pd-1 in a dropped: pod demo-pd-2 in b is not Ready",
		},
		{
			Name: "replay: a recorded deletion is dropped while a member is disconnected",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), disconnected(Placement("b", 1, "r2", Pods("pd", "r1", 2)...))}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			WantMessage: "dropped: member b is not connected",
		},
		{
			Name: "replay: a recorded deletion is dropped when the spec was reverted",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...)}}),
			WantMessage: "dropped: pod demo-pd-1 is no longer outdated",
		},
		{
			Name: "replay: a recorded scale-in is dropped when the placement was scaled back",
			State: State(Op(v1alpha1.OperationScale, "pd", "a", "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 3, "r1", Pods("pd", "r1", 0, 1, 2)...)}}),
			WantMessage: "dropped: pod demo-pd-2 is no longer surplus",
		},
		{
			Name: "replay: a recorded deletion is dropped while paused",
			State: func() rollout.State {
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}})
				s.Paused = true
				return s
			}(),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			WantMessage: "dropped: paused",
		},
		// --- Defect 2 and Freshness: a member fedop cannot trust blocks
		// every deletion, and a step there is not done until it answers.
		{
			Name: "stale member: a member that has not answered blocks every deletion",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r2", Pods("pd", "r1", 0)...), stale(Placement("b", 1, "r1", Pods("pd", "r1", 1)...))}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			WantMessage: "member b has not answered within the freshness bound",
		},
		{
			Name: "stale member: missing pods are still created",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Holding(stale(Placement("a", 2, "r1", Pods("pd", "r1", 0)...)), 1), Placement("b", 1, "r1", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "stale member: a replacement Ready in a member that went silent is not counted done",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				stale(Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...)), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantMessage: "pod demo-pd-1 is not confirmed available",
		},
		// --- Defect 3: a pod deleted or evicted by someone else comes back
		// under its name, in its member.
		{
			Name: "identity: an externally deleted pod is recreated under its name in its member",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: 3, Placements: []rollout.Placement{
				Holding(Placement("a", 2, "r1", Pods("pd", "r1", 0)...), 0, 1), Placement("b", 1, "r1", Pods("pd", "r1", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "identity: an externally deleted pod is recreated even during an upgrade, before any deletion",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "b", "", ""), rollout.Component{Name: "pd", NextOrdinal: 3, Placements: []rollout.Placement{
				Holding(Placement("a", 2, "r2", Pods("pd", "r1", 1)...), 0, 1), Placement("b", 1, "r2", Pods("pd", "r2", 2)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b"},
			WantCreate: []string{"a/demo-pd-0"},
		},
		// --- Defect 4: no ordinal that a member out of sight may hold is
		// ever handed out again.
		{
			Name: "ordinals: a scale-out while a member is partitioned does not reuse its ordinals",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: 3, Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0)...), disconnected(Placement("b", 2, "r1", Pods("pd", "r1", 1, 2)...))}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-3", TargetRevision: "r1", Stage: v1alpha1.StageWaitingReady},
			WantCreate: []string{"a/demo-pd-3"},
		},
		{
			Name: "ordinals: without a record, no new ordinal while a member that may hold pods is out of sight",
			State: func() rollout.State {
				s := State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r1", Pods("pd", "r1", 0)...), disconnected(Placement("b", 1, "r1"))}})
				s.OrdinalsRecorded = false
				return s
			}(),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd"},
			WantMessage: "until every member that may hold its pods is connected",
		},
		{
			Name: "ordinals: initialization with a member down hands out its ordinals too, in topology order",
			State: State(nil,
				rollout.Component{Name: "pd", Placements: []rollout.Placement{disconnected(Placement("a", 1, "r1")), Placement("b", 2, "r1")}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationInitialize, Component: "pd"},
			WantCreate: []string{"b/demo-pd-1", "b/demo-pd-2"},
		},
		{
			Name: "ordinals: past the largest ordinal, the lowest one nobody holds is taken while everything is in sight",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: rollout.MaxOrdinal + 1, Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0)...), Placement("b", 2, "r1", Pods("pd", "r1", 1, 3)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-2", TargetRevision: "r1", Stage: v1alpha1.StageWaitingReady},
			WantCreate: []string{"a/demo-pd-2"},
		},
		{
			Name: "ordinals: a scale-in lets go of an ordinal whose pod is gone before deleting one that runs",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: 3, Placements: []rollout.Placement{
				Holding(Placement("a", 2, "r1", Pods("pd", "r1", 0, 2)...), 1)}}),
			WantMessage: "every pod is at its update revision and available",
		},
		// --- Defect 5: failed pods are replaced under their names, outside
		// the one-disruption budget.
		{
			Name: "failed pod: a pod in phase Failed is deleted to come back under its name",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", failed(Pods("pd", "r1", 0, 1), 1)...)}}),
			WantReplace: []string{"a/demo-pd-1"},
			WantMessage: "replacing failed pod demo-pd-1 in a",
		},
		{
			Name: "failed pod: replaced while an upgrade step is in flight, which still waits",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(notReady(Pods("pd", "r2", 1), 0), Pods("pd", "r1", 0)...)...), Placement("b", 1, "r2", failed(Pods("pd", "r1", 2), 0)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantReplace: []string{"b/demo-pd-2"},
			WantMessage: "demo-pd-1 in a to become available",
		},
		{
			Name: "failed pod: not replaced while paused",
			State: func() rollout.State {
				s := State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r1", failed(Pods("pd", "r1", 0, 1), 1)...)}})
				s.Paused = true
				return s
			}(),
		},
		// --- Defect 6: a scale-in step is done only when its pod is seen
		// gone by a member that answers.
		{
			Name: "scale-in done: not while the member has not answered",
			State: State(Op(v1alpha1.OperationScale, "pd", "a", "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				stale(Placement("a", 1, "r1", Pods("pd", "r1", 0, 1)...)), Placement("b", 1, "r1", Pods("pd", "r1", 3)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1"},
			WantMessage: "the removal of pod demo-pd-2 is not confirmed",
		},
		{
			Name: "scale-in done: not while the member is disconnected",
			State: State(Op(v1alpha1.OperationScale, "pd", "a", "demo-pd-2", "demo-pd-2@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				disconnected(Placement("a", 1, "r1", Pods("pd", "r1", 0, 2)...))}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1"},
			WantMessage: "member a is not connected",
		},
		// --- A stuck step, fixed forward, and released by hand.
		{
			Name: "deadline: a pod not available past the progress deadline is named",
			State: func() rollout.State {
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", append(Pods("pd", "r1", 0), created(notReady(Pods("pd", "r2", 1), 0), T0.Add(-11*time.Minute))...)...)}})
				s.ProgressDeadline = 10 * time.Minute
				return s
			}(),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantMessage: "demo-pd-1 in a to become available",
			WantStuck:   "a/demo-pd-1",
		},
		{
			Name: "deadline: the planner asks to be woken when a pod would reach it",
			State: func() rollout.State {
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", append(Pods("pd", "r1", 0), created(notReady(Pods("pd", "r2", 1), 0), T0.Add(-4*time.Minute))...)...)}})
				s.ProgressDeadline = 10 * time.Minute
				return s
			}(),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageWaitingReady, NextPod: "demo-pd-0", NextPodUID: "demo-pd-0@r1"},
			WantMessage: "demo-pd-1 in a to become available",
			WantAfter:   6 * time.Minute,
		},
		{
			// kubernetes#67250: reverting a bad image must unstick the
			// rollout without manual deletes.
			Name: "fix forward: a replacement stuck at a revision the spec left is replaced at once",
			State: State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", append(Pods("pd", "r1", 0), notReady(Pods("pd", "bad", 1), 0)...)...), Placement("b", 1, "r1", Pods("pd", "r1", 2)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@bad", TargetRevision: "r1", Stage: v1alpha1.StageDeleting},
			WantDelete:  "a/demo-pd-1",
			WantMessage: "dropped: pod demo-pd-1 is outdated and not available",
		},
		{
			Name: "release: the operation a user released is dropped and planned again",
			State: func() rollout.State {
				s := State(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", append(Pods("pd", "r2", 0), Pods("pd", "r1", 1)...)...)}})
				s.Release = true
				return s
			}(),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting},
			WantDelete: "a/demo-pd-1",
		},
		{
			// The operation started in the second the annotation names: a
			// new one started now would carry the same startedTime and be
			// released in turn, and the next, until the second is over.
			Name: "release: no operation starts in the second the annotation names",
			State: func() rollout.State {
				op := Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1")
				op.StartedTime = metav1.NewTime(T0)
				s := at(T0.Add(300*time.Millisecond), State(op, rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", append(Pods("pd", "r2", 0), Pods("pd", "r1", 1)...)...)}}))
				s.Release, s.ReleaseNames = true, T0
				return s
			}(),
			WantMessage: "Upgrade waits for the second after 2026-11-21T06:00:00Z, which the fedop.io/release-operation annotation names",
			WantAfter:   700 * time.Millisecond,
		},
		{
			Name: "release: the annotation, once its second is over, holds nothing back",
			State: func() rollout.State {
				s := at(T0.Add(time.Second), State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
					Placement("a", 2, "r2", append(Pods("pd", "r2", 0), Pods("pd", "r1", 1)...)...)}}))
				s.ReleaseNames = T0
				return s
			}(),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting},
			WantDelete: "a/demo-pd-1",
		},
		// --- Storage: claims kept by a scale-in are taken back, and
		// claims grow in place one pod at a time.
		{
			Name: "storage: a scale-out takes back an ordinal whose claims the placement kept",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: 3, Placements: []rollout.Placement{
				retained(Placement("a", 2, "r1", Pods("pd", "r1", 0)...), 1), retained(Placement("b", 1, "r1", Pods("pd", "r1", 2)...), 5)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-1", TargetRevision: "r1", Stage: v1alpha1.StageWaitingReady},
			WantCreate: []string{"a/demo-pd-1"},
		},
		{
			Name: "storage: claims another member kept are not taken",
			State: State(nil, rollout.Component{Name: "pd", NextOrdinal: 3, Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0)...), retained(Placement("b", 1, "r1", Pods("pd", "r1", 2)...), 1)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationScale, Component: "pd", Member: "a", Pod: "demo-pd-3", TargetRevision: "r1", Stage: v1alpha1.StageWaitingReady},
			WantCreate: []string{"a/demo-pd-3"},
		},
		{
			Name: "expand: claims smaller than their template grow, the first pod's first",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", claims(Pods("pd", "r1", 0, 1), 10, 10, 20, true)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationExpand, Component: "pd", Member: "a", Pod: "demo-pd-0"},
			WantExpand:  []string{"data-demo-pd-0"},
			WantMessage: "expanding the claims of pod demo-pd-0 in a",
		},
		{
			Name: "expand: the next pod waits until the claims have their size",
			State: State(Op(v1alpha1.OperationExpand, "pd", "a", "demo-pd-0", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", append(claims(Pods("pd", "r1", 0), 20, 10, 20, true), claims(Pods("pd", "r1", 1), 10, 10, 20, true)...)...)}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationExpand, Component: "pd", Member: "a", Pod: "demo-pd-0"},
			WantMessage: "the claims of pod demo-pd-0 in a to reach their size",
		},
		{
			Name: "expand: once they have it, the next pod's claims grow",
			State: State(Op(v1alpha1.OperationExpand, "pd", "a", "demo-pd-0", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", append(claims(Pods("pd", "r1", 0), 20, 20, 20, true), claims(Pods("pd", "r1", 1), 10, 10, 20, true)...)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationExpand, Component: "pd", Member: "a", Pod: "demo-pd-1"},
			WantExpand: []string{"data-demo-pd-1"},
		},
		{
			Name: "expand: a StorageClass that does not allow expansion is reported, and nothing grows",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r1", claims(Pods("pd", "r1", 0), 10, 10, 20, false)...)}}),
			WantMessage:      "every pod is at its update revision",
			WantUnexpandable: []string{"data-demo-pd-0 in a"},
		},
		{
			Name: "expand: an upgrade goes first while claims resize",
			State: State(Op(v1alpha1.OperationExpand, "pd", "a", "demo-pd-0", ""), rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 1, "r2", claims(Pods("pd", "r1", 0), 20, 10, 20, true)...)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-0", PodUID: "demo-pd-0@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting},
			WantDelete: "a/demo-pd-0",
		},
		{
			Name: "hooks: an upgrade step begins by draining its pod; nothing is deleted yet",
			State: State(nil, hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks)),
			WantOp:    &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDraining},
			WantDrain: "a/demo-pd-1",
		},
		{
			Name: "hooks: the drain answered: the pod is deleted",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDraining, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks)), rollout.Calls{Drained: true}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDeleting},
			WantDelete:  "a/demo-pd-1",
			WantMessage: "pod demo-pd-1 in a is drained; deleting pod demo-pd-1 in a",
		},
		{
			Name: "hooks: a failing drain is called again, and says so",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDraining, time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks)), rollout.Calls{Failed: "503 Service Unavailable", Failures: 3}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDraining},
			WantDrain:   "a/demo-pd-1",
			WantHook:    v1alpha1.ReasonHookFailing,
			WantMessage: "attempt 3 failed: 503 Service Unavailable",
		},
		{
			Name: "hooks: a drain that has not answered within its timeout halts (onTimeout Halt): no call, no deletion",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDraining, 3*time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks)), rollout.Calls{Failed: "timeout", Failures: 9}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDraining},
			WantHook:    v1alpha1.ReasonHookTimedOut,
			WantMessage: "halted: the preDelete hook of pod demo-pd-1 in a has not succeeded within 2m0s",
		},
		{
			Name: "hooks: past the timeout with onTimeout Proceed, the pod is deleted anyway",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDraining, 3*time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, rollout.Hooks{PreDelete: true, PreDeleteTimeout: 2 * time.Minute, Proceed: true})),
			WantOp:        &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDeleting},
			WantDelete:    "a/demo-pd-1",
			WantProceeded: true,
		},
		{
			// The stage began a moment before T0, so its start reads back as
			// T0-1s; 1.05 s after that stamp the 1 s timeout may have run
			// for as little as 50 ms (issue Hooks: the CI saw a pod deleted
			// 33 ms into its drain).
			Name: "hooks: a stage start stored to the second does not end a 1 s timeout early",
			State: at(T0.Add(50*time.Millisecond), State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDraining, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, rollout.Hooks{PreDelete: true, PreDeleteTimeout: time.Second, Proceed: true}))),
			WantOp:    &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDraining},
			WantDrain: "a/demo-pd-1",
		},
		{
			Name: "hooks: a drained pod's deletion called off by a reverted spec is undone first",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDeleting, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...)}}, drainHooks)),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageUndoing},
			WantUndo:    "a/demo-pd-1",
			WantMessage: "pod demo-pd-1 is no longer outdated",
		},
		{
			Name: "hooks: pausing while a pod drains calls the step off and undoes it",
			State: paused(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDraining, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks))),
			WantOp:   &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageUndoing},
			WantUndo: "a/demo-pd-1",
		},
		{
			Name: "hooks: a failing undo is called again; nothing else is planned",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageUndoing, time.Hour), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...)}}, drainHooks)), rollout.Calls{Failed: "connection refused", Failures: 40}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageUndoing},
			WantUndo:    "a/demo-pd-1",
			WantHook:    v1alpha1.ReasonHookFailing,
			WantMessage: "attempt 40 failed: connection refused",
		},
		{
			Name: "hooks: once undone, the step is dropped and planning goes on",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageUndoing, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...)}}, drainHooks)), rollout.Calls{Undone: true}),
			WantMessage: "called off and undone",
			WantUndone:  "a/demo-pd-1",
		},
		{
			Name: "hooks: an undo is moot once its pod is gone",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageUndoing, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Holding(Placement("a", 2, "r1", Pods("pd", "r1", 0)...), 1)}}, drainHooks)),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			WantCreate:  []string{"a/demo-pd-1"},
			WantMessage: "nothing to undo",
		},
		{
			Name: "hooks: without an undo, a called-off step is dropped",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDeleting, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", Pods("pd", "r1", 0, 1)...)}}, rollout.Hooks{PreDelete: true, PreDeleteTimeout: time.Minute})),
			WantMessage: "dropped: pod demo-pd-1 is no longer outdated",
		},
		{
			Name: "hooks: a drained pod waits, drained, while another pod is unavailable",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDeleting, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", notReady(Pods("pd", "r1", 0, 1), 0)...)}}, drainHooks)),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageDeleting},
			WantMessage: "pod demo-pd-1 in a is drained and waits to be deleted",
		},
		{
			Name: "hooks: a release while a pod is drained undoes it before the operation goes",
			State: released(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageDeleting, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks))),
			WantOp:   &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageUndoing},
			WantUndo: "a/demo-pd-1",
		},
		{
			Name: "hooks: a failed pod is replaced without its preDelete hook",
			State: State(nil, hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r1", failed(Pods("pd", "r1", 0, 1), 1)...)}}, drainHooks)),
			WantReplace: []string{"a/demo-pd-1"},
			WantMessage: "replacing failed pod demo-pd-1 in a",
		},
		{
			Name: "hooks: a release waits for the undo, then the operation goes",
			State: calling(released(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageUndoing, time.Second), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...)}}, drainHooks))), rollout.Calls{Undone: true}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDraining},
			WantDrain:   "a/demo-pd-1",
			WantUndone:  "a/demo-pd-1",
			WantMessage: "called off and undone",
		},
		{
			Name: "gate: before a deletion, the component's other pods are asked",
			State: State(nil, hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
			WantOp:    &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			WantCheck: []string{"a/demo-pd-0", "b/demo-pd-2"},
		},
		{
			Name: "gate: one failing pod stops the upgrade before its first deletion",
			State: calling(State(nil, hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: map[string]string{"a/demo-pd-0": "", "b/demo-pd-2": "500 unhealthy"}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd"},
			WantCheck:   []string{"a/demo-pd-0", "b/demo-pd-2"},
			WantHook:    v1alpha1.ReasonHealthCheckFailed,
			WantMessage: "pod demo-pd-2 in b: 500 unhealthy",
		},
		{
			Name: "gate: passing, the step begins; the victim's own answer is not asked",
			State: calling(State(nil, hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: healthy("", "a/demo-pd-0", "b/demo-pd-2")}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantDelete: "a/demo-pd-1",
		},
		{
			Name: "gate: a new component that waits for its gate still starts from its first member",
			State: calling(State(Op(v1alpha1.OperationUpgrade, "pd", "b", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r2", 0)...), Placement("b", 1, "r2", Pods("pd", "r2", 1)...)}},
				hooked(rollout.Component{Name: "tikv", Placements: []rollout.Placement{
					Placement("a", 2, "t2", Pods("tikv", "t1", 0, 1)...), Placement("b", 1, "t2", Pods("tikv", "t1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: map[string]string{"a/demo-tikv-0": "HTTP 500", "b/demo-tikv-2": ""}}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "tikv"},
			WantCheck:   []string{"a/demo-tikv-0", "b/demo-tikv-2"},
			WantHook:    v1alpha1.ReasonHealthCheckFailed,
			WantMessage: "pod demo-tikv-0 in a: HTTP 500",
		},
		{
			Name: "gate: once it passes, the new component's first member goes first",
			State: calling(State(Op(v1alpha1.OperationUpgrade, "tikv", "", "", ""),
				rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r2", Pods("pd", "r2", 0)...), Placement("b", 1, "r2", Pods("pd", "r2", 1)...)}},
				hooked(rollout.Component{Name: "tikv", Placements: []rollout.Placement{
					Placement("a", 2, "t2", Pods("tikv", "t1", 0, 1)...), Placement("b", 1, "t2", Pods("tikv", "t1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: healthy("", "a/demo-tikv-0", "b/demo-tikv-2")}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "tikv", Member: "a", Pod: "demo-tikv-1", PodUID: "demo-tikv-1@t1", TargetRevision: "t2", Stage: v1alpha1.StageDeleting, NextPod: "demo-tikv-2", NextPodUID: "demo-tikv-2@t1"},
			WantDelete: "a/demo-tikv-1",
		},
		{
			Name: "verify: an available replacement is verified (scope Pod) before the step completes",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageWaitingReady, time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
			WantOp:    &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageVerifying, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantCheck: []string{"a/demo-pd-1"},
		},
		{
			Name: "verify: scope Component asks every pod of the component",
			State: State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageWaitingReady, time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, rollout.Hooks{PostReady: true, ComponentScope: true, PostReadyTimeout: time.Minute})),
			WantOp:    &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageVerifying, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantCheck: []string{"a/demo-pd-0", "a/demo-pd-1", "b/demo-pd-2"},
		},
		{
			Name: "verify: a failing gate holds the step",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageVerifying, time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: healthy("not in quorum", "a/demo-pd-1")}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageVerifying, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantCheck:   []string{"a/demo-pd-1"},
			WantHook:    v1alpha1.ReasonHookFailing,
			WantMessage: "the postReady gate fails (pod demo-pd-1 in a: not in quorum)",
		},
		{
			Name: "verify: past its timeout a failing gate halts, and still holds",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageVerifying, 6*time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: healthy("not in quorum", "a/demo-pd-1")}),
			WantOp:      &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a", Pod: "demo-pd-1", PodUID: "demo-pd-1@r1", Stage: v1alpha1.StageVerifying, NextPod: "demo-pd-2", NextPodUID: "demo-pd-2@r1"},
			WantCheck:   []string{"a/demo-pd-1"},
			WantHook:    v1alpha1.ReasonHookTimedOut,
			WantMessage: "halted: the postReady gate after pod demo-pd-1 in a has not passed within 5m0s",
		},
		{
			Name: "verify: passing, the step completes and the next one's gate is asked",
			State: calling(State(staged(Op(v1alpha1.OperationUpgrade, "pd", "a", "demo-pd-1", "demo-pd-1@r1"), v1alpha1.StageVerifying, time.Minute), hooked(rollout.Component{Name: "pd", Placements: []rollout.Placement{
				Placement("a", 2, "r2", append(Pods("pd", "r1", 0), Pods("pd", "r2", 1)...)...), Placement("b", 1, "r2", Pods("pd", "r1", 2)...)}}, gateHooks)),
				rollout.Calls{Health: healthy("", "a/demo-pd-1")}),
			WantOp:    &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "a"},
			WantCheck: []string{"a/demo-pd-0", "a/demo-pd-1"},
		},
		{
			Name: "partition: pods below it keep their revision; the highest ordinal goes first",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				partitioned(Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), 2), partitioned(Placement("b", 1, "r2", Pods("pd", "r1", 2)...), 2)}}),
			WantOp:     &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "b", Pod: "demo-pd-2", PodUID: "demo-pd-2@r1", TargetRevision: "r2", Stage: v1alpha1.StageDeleting},
			WantDelete: "b/demo-pd-2",
		},
		{
			Name: "partition: nothing at or above it is outdated: no operation",
			State: State(nil, rollout.Component{Name: "pd", Placements: []rollout.Placement{
				partitioned(Placement("a", 2, "r2", Pods("pd", "r1", 0, 1)...), 2), partitioned(Placement("b", 1, "r2", Pods("pd", "r2", 2)...), 2)}}),
			WantMessage: "every pod is at its update revision",
		},
		{
			Name:        "an unknown operation type is dropped",
			State:       State(&v1alpha1.Operation{Type: "Rebalance"}, rollout.Component{Name: "pd", Placements: []rollout.Placement{Placement("a", 1, "r1", Pods("pd", "r1", 0)...)}}),
			WantMessage: "dropped unknown operation",
		},
	}
}
