package main

import (
	"fmt"
	"strings"
	"time"
)

// Targets of issue 19 (Performance) measured beside items 1 and 2.
const (
	// targetFloorP50 and targetFloorP99 are the most fedop's step overhead
	// may be, as a multiple of the floor controller's, at p50 and p99.
	targetFloorP50 = 1.5
	targetFloorP99 = 2.0
	// targetCriticalWrites is the host writes a step may make between the
	// previous replacement seen Ready and its deletion seen.
	targetCriticalWrites = 0.0
	// targetBytesPerPod19 is issue 19's RSS per managed pod.
	targetBytesPerPod19 = 4 * 1024
	// referenceTarget is the target of a reference system's figure.
	referenceTarget = "reference"
)

// ratio returns a / b, 0 when b is not positive.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// floorRows are the rows of issue 19 measured with items 1 and 2: the
// floor controller beside fedop and the StatefulSet, and the host writes
// on a step's critical path (item 9).
func (r *results) floorRows(o options) []row {
	if r.floor == nil || len(r.stepFloor) == 0 {
		return nil
	}
	fp50, fp99 := median(roundPercentiles(r.stepFedop, 50)), median(roundPercentiles(r.stepFedop, 99))
	lp50, lp90, lp99 := median(roundPercentiles(r.stepFloor, 50)), median(roundPercentiles(r.stepFloor, 90)), median(roundPercentiles(r.stepFloor, 99))
	r50, r99 := ratio(fp50, lp50), ratio(fp99, lp99)
	rows := []row{
		{"1", fmt.Sprintf("step overhead, floor controller (%d pods over 2 members; p50/p90/p99, median of %d rounds)", r.floor.pods, len(r.stepFloor)),
			fmt.Sprintf("%s / %s / %s", ms(lp50), ms(lp90), ms(lp99)), referenceTarget, "-"},
		{"1", "step overhead p50, fedop / floor controller (same run, same observer)", fmt.Sprintf("%.2f (%s / %s)", r50, ms(fp50), ms(lp50)),
			fmt.Sprintf("<= %.1f", targetFloorP50), metStr(lp50 > 0 && r50 <= targetFloorP50)},
		{"1", "step overhead p99, fedop / floor controller", fmt.Sprintf("%.2f (%s / %s)", r99, ms(fp99), ms(lp99)),
			fmt.Sprintf("<= %.1f", targetFloorP99), metStr(lp99 > 0 && r99 <= targetFloorP99)},
	}
	if len(r.delayFedop) > 0 && len(r.delayFloor) > 0 {
		fe := median(efficiencies(r.delayFedop, r.fedop.pods, o.delay))
		se := median(efficiencies(r.delaySTS, r.sts.pods, o.delay))
		le := median(efficiencies(r.delayFloor, r.floor.pods, o.delay))
		rows = append(rows,
			row{"2", fmt.Sprintf("rollout efficiency (N x D / total, D=%s), fedop vs StatefulSet, same run (floor controller beside)", o.delay),
				fmt.Sprintf("%.3f vs %.3f (floor %.3f)", fe, se, le), "fedop >= StatefulSet", metStr(fe >= se)})
	}
	var steps, inside, outside, unmatched int
	for _, w := range append(append([]windowResult{}, r.stepFedop...), r.delayFedop...) {
		steps += w.writes.steps
		inside += w.writes.inside
		outside += w.writes.outside
		unmatched += w.writes.unmatched
	}
	unmatchedNote := ""
	if unmatched > 0 {
		unmatchedNote = fmt.Sprintf("; %d windows end at the deletion seen, their DELETE not in the audit logs", unmatched)
	}
	if steps > 0 {
		in, out := float64(inside)/float64(steps), float64(outside)/float64(steps)
		rows = append(rows,
			row{"9", "host writes on a step's critical path (FederationCluster writes stored, by the host's audit log, between the previous replacement seen Ready and the member's receipt of the next DELETE, by its audit log), per step",
				fmt.Sprintf("%.2f (%d in %d steps%s)", in, inside, steps, unmatchedNote), fmt.Sprintf("%.0f", targetCriticalWrites), metStr(in <= targetCriticalWrites)},
			row{"9", "host writes outside the critical path, per step (same rollouts)", fmt.Sprintf("%.2f (%d)", out, outside), reported, "-"})
	}
	return rows
}

// writeFloorDetails writes the sections of the floor controller, the
// per-step phases and the host writes on the critical path.
func (r *results) writeFloorDetails(b *strings.Builder, o options) {
	if r.floor == nil || len(r.stepFloor) == 0 {
		return
	}
	b.WriteString("\n## 1-2. The floor controller\n\n")
	b.WriteString(floorDescription + "\n\n")
	fmt.Fprintf(b, "Its %d pods (%d in each of %s) roll in the same run as fedop's and the StatefulSet's, their upgrades taking turns "+
		"(fedop, StatefulSet, floor in each round), watched by an observer built as theirs; sections 1 and 2 give its rounds beside theirs.\n",
		r.floor.pods, r.floor.pods/2, strings.Join(o.members[:2], " and "))
	r.writePhases(b, o)
	r.writeCriticalWrites(b)
}

// writePhases writes the per-step phase table of each system, item 2's
// rounds (and item 1's).
func (r *results) writePhases(b *strings.Builder, o options) {
	b.WriteString("\n## 2. Where a step's time goes\n\n")
	b.WriteString("For each step (every deletion but a rollout's first), the times from the previous step's replacement seen Ready to: " +
		"this step's pod seen with a deletionTimestamp (the step overhead), its delete event (pod gone), its replacement first seen (created), " +
		"the replacement first seen with spec.nodeName (scheduled), and the replacement seen Ready. All are the observer's receive times; " +
		"each column is the median over every step of the rounds, so the columns need not add up. With the readiness delay, Ready includes D.\n\n")
	b.WriteString(mdHead("rounds", "system", "steps", "deletion seen", "pod gone", "created", "scheduled", "Ready", "steps left out (overlap)"))
	for _, set := range []struct {
		what string
		ws   [][]windowResult
	}{
		{fmt.Sprintf("item 2 (D = %s)", o.delay), [][]windowResult{r.delayFedop, r.delaySTS, r.delayFloor}},
		{"item 1 (Ready at once)", [][]windowResult{r.stepFedop, r.stepSTS, r.stepFloor}},
	} {
		for _, ws := range set.ws {
			if len(ws) == 0 {
				continue
			}
			var steps []stepTimes
			skipped := 0
			for _, w := range ws {
				steps = append(steps, w.phases...)
				skipped += w.skipped
			}
			m := medianPhases(steps)
			b.WriteString(mdRow(set.what, ws[0].rollout.system, fmt.Sprint(m.n), ms(m.deletion), ms(m.gone), ms(m.created), ms(m.scheduled), ms(m.ready), fmt.Sprint(skipped)))
		}
	}
	if len(r.delayWrites) > 0 {
		b.WriteString("\nfedop's host status writes over item 2's rounds, by the manager's `fedop_status_write_seconds` (round trip; mean, writes): ")
		parts := make([]string, 0, len(r.delayWrites))
		for _, w := range r.delayWrites {
			parts = append(parts, fmt.Sprintf("%s %.2fms (%.0f)", w.phase, float64(w.mean.Microseconds())/1000, w.steps))
		}
		b.WriteString(strings.Join(parts, ", ") + ". " +
			"A step's record is written after its deletion returns, in the reconcile that deleted; the replacement is created by the next reconcile " +
			"of the same FederationCluster, which the pod's delete event starts only once that write has returned. " +
			"When the write takes longer than the pod takes to go, the creation waits for the rest: part of fedop's gap from pod gone to created.\n")
	}
}

// writeCriticalWrites writes item 9's section.
func (r *results) writeCriticalWrites(b *strings.Builder) {
	b.WriteString("\n## 9. Host writes on a step's critical path\n\n")
	b.WriteString("Both ends are timed on the API servers, from the lab's audit logs (hack/bench.sh gives every kube-apiserver a policy that logs writes to FederationClusters and pod deletions, and nothing else). " +
		"Each successful write to the FederationCluster `step`, one that changed nothing included, is timed when the host stored it (its ResponseComplete event). " +
		"It is counted inside a step's critical window, from the previous replacement seen Ready by the observer (inclusive) to the member's receipt of the step's DELETE (exclusive), " +
		"or outside when it falls elsewhere between the upgrade's start and its completion recorded. " +
		"The window opens at the observer's receive time because a Metadata-level audit event does not say which of a pod's status writes made it Ready. " +
		"For comparison, the column before the last counts the windows as this item did before, ending at the deletion seen by the observer: its watch events lag on a loaded lab, " +
		"so a status write that followed the DELETE's answer could fall before the deletion was seen. All the times are on this machine's clock.\n\n")
	b.WriteString(mdHead("rounds", "round", "steps", "writes inside", "writes outside", "inside, windows ending at the deletion seen", "deletions not in the audit logs"))
	for _, set := range []struct {
		what string
		ws   []windowResult
	}{{"item 1", r.stepFedop}, {"item 2", r.delayFedop}} {
		for i, w := range set.ws {
			b.WriteString(mdRow(set.what, fmt.Sprint(i+1), fmt.Sprint(w.writes.steps), fmt.Sprint(w.writes.inside), fmt.Sprint(w.writes.outside),
				fmt.Sprint(w.writes.insideSeen), fmt.Sprint(w.writes.unmatched)))
		}
	}
}
