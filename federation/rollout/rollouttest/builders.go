// Package rollouttest holds test support for the rollout planner, shared
// by the planner's own tests and by the tests of the packages that turn a
// plan into status and actions: builders for observed states and the
// planner's decision table. It is imported by tests only.
package rollouttest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// T0 is the time of every state the builders make.
var T0 = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// Pods returns pods of component c of the FederationCluster "demo" at
// revision rev with the given ordinals, Ready for an hour, each with a UID
// that says its name and revision (demo-pd-0@r1).
func Pods(c, rev string, ordinals ...int) []rollout.Pod {
	out := make([]rollout.Pod, 0, len(ordinals))
	for _, o := range ordinals {
		name := rollout.PodName("demo", c, o)
		out = append(out, rollout.Pod{Name: name, UID: types.UID(name + "@" + rev), Ordinal: o, Revision: rev, Ready: true, ReadySince: T0.Add(-time.Hour)})
	}
	return out
}

// Placement returns a connected, fresh placement in member.
func Placement(member string, replicas int32, rev string, ps ...rollout.Pod) rollout.Placement {
	return rollout.Placement{Member: member, Replicas: replicas, Revision: rev, Connected: true, Fresh: true, Pods: ps}
}

// Holding returns pl recorded as holding ordinals besides those of its
// pods, as status records them.
func Holding(pl rollout.Placement, ordinals ...int) rollout.Placement {
	pl.Ordinals = append(pl.Ordinals, ordinals...)
	return pl
}

// State returns the state of FederationCluster "demo" at T0 holding op.
// Its ordinals are recorded: a placement holds what its pods show, plus
// what a case adds to Placement.Ordinals.
func State(op *v1alpha1.Operation, cs ...rollout.Component) rollout.State {
	return rollout.State{Name: "demo", Components: cs, Operation: op, Now: T0, OrdinalsRecorded: true}
}

// Op returns an operation taken a minute before T0.
func Op(t v1alpha1.OperationType, component, member, pod string, uid types.UID) *v1alpha1.Operation {
	return &v1alpha1.Operation{Type: t, Component: component, Member: member, Pod: pod, PodUID: uid, StartedTime: metav1.NewTime(T0.Add(-time.Minute))}
}

// Names returns refs as member/name.
func Names(refs []rollout.PodRef) []string {
	if len(refs) == 0 {
		return nil // as a table row that leaves its Want field unset
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Member+"/"+r.Name)
	}
	return out
}
