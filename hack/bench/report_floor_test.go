package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// issue19Results builds results of items 1, 2, 9, 10 and 11 from
// hand-made figures: every step of a system has overhead step, every
// delayed rollout takes total.
func issue19Results(fedopStep, floorStep, fedopTotal, stsTotal time.Duration, critical int, restart time.Duration, violations int) *results {
	round := func(system string, step, total time.Duration, inside int) windowResult {
		ov := make([]time.Duration, 23)
		for i := range ov {
			ov[i] = step
		}
		w := windowResult{rollout: rolloutResult{system: system, start: phaseT0, end: phaseT0.Add(total), steps: stepStats{deletions: 24, overheads: ov}}}
		if system == "fedop" {
			w.writes = writeCount{steps: 23, inside: inside, outside: 23}
		}
		return w
	}
	r := &results{
		fedop: &system{name: "fedop", pods: 24}, sts: &system{name: "StatefulSet", pods: 24}, floor: &system{name: "floor", pods: 24},
		stsMember: "k8s-a",
	}
	for range 2 {
		r.stepFedop = append(r.stepFedop, round("fedop", fedopStep, 3*time.Second, critical))
		r.stepSTS = append(r.stepSTS, round("StatefulSet", 80*time.Millisecond, 3*time.Second, 0))
		r.stepFloor = append(r.stepFloor, round("floor", floorStep, 2*time.Second, 0))
		r.delayFedop = append(r.delayFedop, round("fedop", fedopStep, fedopTotal, 0))
		r.delaySTS = append(r.delaySTS, round("StatefulSet", 80*time.Millisecond, stsTotal, 0))
		r.delayFloor = append(r.delayFloor, round("floor", floorStep, 25*time.Second, 0))
	}
	r.restart.runs = []restartRun{{members: 2, toStep: restart}, {members: 2, toStep: restart}, {members: 52, toStep: 2 * restart}, {members: 52, toStep: 2 * restart}}
	var v []unavailability
	for range violations {
		v = append(v, unavailability{group: "many-000", pod: "k8s-b/many-000-c-1", start: phaseT0})
	}
	r.many = manyResult{federations: 200, rounds: []manyRound{{total: 60 * time.Second, steps: 1200, overheads: []time.Duration{10 * time.Millisecond, 60 * time.Millisecond}, violations: v}}}
	return r
}

// findRow returns the row of item whose measurement contains part.
func findRow(t *testing.T, rows []row, item, part string) row {
	t.Helper()
	for _, r := range rows {
		if r.item == item && strings.Contains(r.measure, part) {
			return r
		}
	}
	require.Failf(t, "no row", "item %s, %q", item, part)
	return row{}
}

func TestIssue19Rows(t *testing.T) {
	o := options{delay: time.Second, members: []string{"k8s-a", "k8s-b"}, perMember: 6, restartFleet: 50,
		items: map[int]bool{1: true, 2: true, 3: true, 9: true, 10: true, 11: true}}
	find := func(rows []row, item, part string) row { return findRow(t, rows, item, part) }

	good := issue19Results(12*time.Millisecond, 10*time.Millisecond, 25*time.Second, 25500*time.Millisecond, 0, time.Second, 0)
	rows := good.rows(o)
	assert.Equal(t, "yes", find(rows, "1", "p50, fedop / floor").met)
	assert.Equal(t, "1.20 (12ms / 10ms)", find(rows, "1", "p50, fedop / floor").figure)
	assert.Equal(t, "yes", find(rows, "1", "p99, fedop / floor").met)
	eff := find(rows, "2", "fedop vs StatefulSet")
	assert.Equal(t, "yes", eff.met)
	assert.Equal(t, "0.960 vs 0.941 (floor 0.960)", eff.figure)
	assert.Equal(t, "yes", find(rows, "9", "critical path (").met)
	// Two rounds of item 1 and two of item 2, 23 steps each.
	assert.Equal(t, "1.00 (92)", find(rows, "9", "outside").figure)
	assert.Equal(t, "yes", find(rows, "10", ", 2 members").met)
	assert.Equal(t, "yes", find(rows, "10", "50 apiserver-only").met)
	assert.Equal(t, "yes", find(rows, "11", "pods deleted while").met)
	// 60ms against item 1's p99 of 12ms.
	assert.Equal(t, "NO", find(rows, "11", "p99 of all").met)
	assert.Equal(t, "20.0 (1200 steps in 1m0s)", find(rows, "11", "steps per second").figure)

	bad := issue19Results(40*time.Millisecond, 10*time.Millisecond, 27*time.Second, 25*time.Second, 23, 2*time.Second, 2)
	rows = bad.rows(o)
	assert.Equal(t, "NO", find(rows, "1", "p50, fedop / floor").met)
	assert.Equal(t, "NO", find(rows, "1", "p99, fedop / floor").met)
	assert.Equal(t, "NO", find(rows, "2", "fedop vs StatefulSet").met)
	assert.Equal(t, "NO", find(rows, "9", "critical path (").met)
	assert.Equal(t, "NO", find(rows, "10", ", 2 members").met)
	assert.Equal(t, "NO", find(rows, "10", "50 apiserver-only").met)
	assert.Equal(t, "2", find(rows, "11", "pods deleted while").figure)
	assert.Contains(t, bad.markdown(o, rows), "k8s-b/many-000-c-1 (FederationCluster many-000)", "a violation is named")
}
