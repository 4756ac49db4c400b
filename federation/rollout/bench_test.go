package rollout_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// upgradeState returns an upgrade in flight over components x members
// placements of perPlacement pods each: the first placement's highest
// ordinal has just been replaced and is Ready, every other pod is Ready at
// the old revision. Next must then plan the following deletion: the
// planner's work on every step of a rollout.
func upgradeState(components, members, perPlacement int) rollout.State {
	now := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	s := rollout.State{Name: "bench", Now: now}
	for c := range components {
		comp := rollout.Component{Name: fmt.Sprintf("c%d", c)}
		ordinal := 0
		for m := range members {
			pl := rollout.Placement{Member: fmt.Sprintf("m%d", m), Replicas: int32(perPlacement), Revision: "new", Connected: true, Fresh: true}
			for range perPlacement {
				name := rollout.PodName(s.Name, comp.Name, ordinal)
				pl.Pods = append(pl.Pods, rollout.Pod{
					Name: name, UID: types.UID(name + "@old"), Ordinal: ordinal, Revision: "old",
					Ready: true, ReadySince: now.Add(-time.Hour),
				})
				ordinal++
			}
			comp.Placements = append(comp.Placements, pl)
		}
		s.Components = append(s.Components, comp)
	}
	first := &s.Components[0].Placements[0]
	last := &first.Pods[len(first.Pods)-1]
	s.Operation = &v1alpha1.Operation{
		Type: v1alpha1.OperationUpgrade, Component: s.Components[0].Name, Member: first.Member,
		Pod: last.Name, PodUID: last.UID, TargetRevision: "new", StartedTime: metav1.NewTime(now.Add(-time.Minute)),
	}
	last.UID, last.Revision, last.ReadySince = types.UID(last.Name+"@new"), "new", now.Add(-time.Millisecond)
	return s
}

// BenchmarkNext measures one planning decision in the middle of an
// upgrade, for the benchmark's 24-pod federation (2 components x 2
// members x 6) and for larger ones.
func BenchmarkNext(b *testing.B) {
	for _, size := range []struct{ components, members, pods int }{
		{2, 2, 6},
		{3, 10, 10},
		{1, 2, 1000},
	} {
		s := upgradeState(size.components, size.members, size.pods)
		b.Run(fmt.Sprintf("pods=%d/components=%d/members=%d", size.components*size.members*size.pods, size.components, size.members), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plan := rollout.Next(s)
				if plan.Delete == nil {
					b.Fatalf("no deletion planned: %s", plan.Message)
				}
			}
		})
	}
}
