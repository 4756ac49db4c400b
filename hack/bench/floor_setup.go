package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// How the benchmark runs the floor controller (floor.go) beside fedop
// and the StatefulSet in items 1 and 2, and what it adds to each upgrade.

// setupFloor starts the floor controller beside fedop and the StatefulSet
// of items 1 and 2, on the same two members with as many pods as fedop's
// FederationCluster (fcName, whose writes item 9 counts), with an
// observer of its own built like theirs.
func (b *bench) setupFloor(ctx context.Context, image, fcName string) error {
	ms := b.options.members[:2]
	cfgs, clients, obs, err := b.floorLab(ctx)
	if err != nil {
		return err
	}
	b.res.observers = append(b.res.observers, obs)
	perMember := b.res.fedop.pods / len(ms)
	if b.floor, err = startFloor(ctx, cfgs, clients, []string{floorName}, perMember, image); err != nil {
		return err
	}
	b.cleanup(b.floor.stop)
	b.res.floor = b.floor.system(obs)
	b.stepFC = fcName
	return nil
}

// floorLab returns the REST configs and clients of the lab's first two
// members, where the floor controller is to run, and an observer of its
// pods there.
func (b *bench) floorLab(ctx context.Context) (map[string]*rest.Config, map[string]kubernetes.Interface, *observer, error) {
	cfgs, clients := b.labConfigs(), map[string]kubernetes.Interface{}
	for m := range cfgs {
		clients[m] = b.members[m]
	}
	obs, err := startObserver(ctx, cfgs, floorSelector())
	return cfgs, clients, obs, err
}

// stopFloor stops the floor controller and deletes its pods, so that
// later items find the members as before.
func (b *bench) stopFloor(ctx context.Context) error {
	if b.floor == nil {
		return nil
	}
	b.floor.stop()
	return b.deleteFloorPods(ctx, b.floor.members)
}

// deleteFloorPods deletes the floor controller's pods in members.
func (b *bench) deleteFloorPods(ctx context.Context, members []string) error {
	for _, m := range members {
		err := b.members[m].CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)},
			metav1.ListOptions{LabelSelector: floorSelector()})
		if err != nil {
			return fmt.Errorf("deleting the floor controller's pods in %s: %w", m, err)
		}
	}
	return nil
}

// afterUpgrade adds to w, an upgrade of s just measured, its steps part by
// part, each with its DELETE's receipt on its member, and, for fedop, the
// FederationCluster's writes in and out of their critical windows,
// counted from the upgrade's start to now (its completion recorded, and
// the events' grace passed), from the lab's audit logs (hostwrites.go).
func (b *bench) afterUpgrade(s *system, w *windowResult) error {
	w.phases, w.skipped = computePhases(s.obs.Records(), w.rollout.start)
	deletes := map[string]map[string][]time.Time{}
	for _, m := range b.options.members[:2] {
		var err error
		if deletes[m], err = podDeletes(auditLog(b.labDir, m)); err != nil {
			return err
		}
	}
	unmatched := matchDeletes(w.phases, deletes)
	if s != b.res.fedop || b.stepFC == "" {
		return nil
	}
	writes, err := fcWrites(auditLog(b.labDir, hostCluster), b.stepFC)
	if err != nil {
		return err
	}
	w.writes = attributeWrites(times(writes), w.phases, w.rollout.start, time.Now())
	w.writes.unmatched = unmatched
	for _, hw := range writes {
		for i, st := range w.phases {
			if st.within(hw.at, st.deletedAt) {
				b.logf("  host write between step %d's previous replacement seen Ready and its deletion seen: "+
					"%s at %s, %s after that Ready, %s before the DELETE's receipt, %s before the deletion seen",
					i+1, hw.what, hw.at.Format("15:04:05.000000"), hw.at.Sub(st.anchor), st.deleteSent.Sub(hw.at), st.deletedAt.Sub(hw.at))
			}
		}
	}
	b.logf("  host writes to FederationCluster step: %d inside the %d steps' critical windows, %d outside "+
		"(%d inside if a window ended at the deletion seen; %d deletions not in the audit logs)",
		w.writes.inside, w.writes.steps, w.writes.outside, w.writes.insideSeen, unmatched)
	return nil
}

// systems are the systems of items 1 and 2 that exist, in the order their
// upgrades take turns.
func (r *results) systems() []*system {
	var out []*system
	for _, s := range []*system{r.fedop, r.sts, r.floor} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
