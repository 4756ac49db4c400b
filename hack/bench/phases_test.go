package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

var phaseT0 = time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)

func atMS(ms int) time.Time { return phaseT0.Add(time.Duration(ms) * time.Millisecond) }

func msD(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// oldPod is an instance Ready long before the rollout, deleted at deleted
// (ms) and gone 10 ms later.
func oldPod(group, cluster, name string, deleted int) podRecord {
	return podRecord{Labels: map[string]string{v1alpha1.LabelInstance: group}, Member: cluster, Name: name, UID: types.UID(cluster + name + "-old"),
		FirstSeen: atMS(-10000), ScheduledAt: atMS(-9990), ReadyAt: atMS(-9000), DeletedAt: atMS(deleted), GoneAt: atMS(deleted + 10)}
}

// newPod is a replacement first seen at created, scheduled at scheduled
// and Ready at ready (ms; never when negative).
func newPod(group, cluster, name string, created, scheduled, ready int) podRecord {
	r := podRecord{Labels: map[string]string{v1alpha1.LabelInstance: group}, Member: cluster, Name: name,
		UID: types.UID(cluster + name + "-new"), FirstSeen: atMS(created)}
	if scheduled >= 0 {
		r.ScheduledAt = atMS(scheduled)
	}
	if ready >= 0 {
		r.ReadyAt = atMS(ready)
	}
	return r
}

func TestComputePhases(t *testing.T) {
	recs := []podRecord{
		oldPod("", "a", "p-0", 0), newPod("", "a", "p-0", 20, 25, 1030),
		oldPod("", "b", "p-0", 1040), newPod("", "b", "p-0", 1070, 1080, 2090),
		oldPod("", "a", "p-1", 2100), newPod("", "a", "p-1", 2120, -1, -1),
	}
	steps, skipped := computePhases(recs, atMS(0))
	require.Len(t, steps, 2)
	assert.Zero(t, skipped)
	assert.Equal(t, stepTimes{member: "b", pod: "p-0", anchor: atMS(1030), deletedAt: atMS(1040),
		deletion: msD(10), gone: msD(20), created: msD(40), scheduled: msD(50), ready: msD(1060)}, steps[0])
	// The last replacement was never seen scheduled nor Ready.
	assert.Equal(t, stepTimes{member: "a", pod: "p-1", anchor: atMS(2090), deletedAt: atMS(2100),
		deletion: msD(10), gone: msD(20), created: msD(30), scheduled: -1, ready: -1}, steps[1])

	m := medianPhases(steps)
	assert.Equal(t, 2, m.n)
	assert.Equal(t, msD(35), m.created)
	// Parts not seen are left out of the median, not counted as -1.
	assert.Equal(t, msD(50), m.scheduled)
	assert.Equal(t, msD(1060), m.ready)

	t.Run("a deletion before the previous replacement is Ready is left out", func(t *testing.T) {
		recs := []podRecord{
			oldPod("", "a", "p-0", 0), newPod("", "a", "p-0", 20, 25, 80),
			oldPod("", "a", "p-1", 50), newPod("", "a", "p-1", 60, 65, 70),
		}
		steps, skipped := computePhases(recs, atMS(0))
		assert.Empty(t, steps)
		assert.Equal(t, 1, skipped)
	})
	t.Run("deletions before the start are not steps", func(t *testing.T) {
		steps, skipped := computePhases(recs, atMS(1040))
		assert.Len(t, steps, 1)
		assert.Zero(t, skipped)
	})
}

func TestAttributeWrites(t *testing.T) {
	steps := []stepTimes{
		{anchor: atMS(100), deletedAt: atMS(130)},
		{anchor: atMS(300), deleteSent: atMS(312), deletedAt: atMS(320)},
	}
	writes := []time.Time{
		atMS(-5),  // before the rollout: not counted
		atMS(50),  // before the first step's window
		atMS(100), // at an anchor: inside
		atMS(129), // inside (the window ends at the deletion seen: no DELETE known)
		atMS(130), // at the deletion: outside (the deletion was already seen)
		atMS(310), // inside
		atMS(315), // after the DELETE's receipt: outside, though before the deletion seen
		atMS(400), // after the last step, before the end
		atMS(600), // after the end: not counted
	}
	got := attributeWrites(writes, steps, atMS(0), atMS(500))
	assert.Equal(t, writeCount{steps: 2, inside: 3, outside: 4, insideSeen: 4}, got)
	assert.Equal(t, writeCount{}, attributeWrites(nil, nil, atMS(0), atMS(500)))
}

func TestOneAtATimeViolations(t *testing.T) {
	t.Run("sequential in each group, groups concurrent", func(t *testing.T) {
		recs := []podRecord{
			oldPod("x", "a", "x-0", 0), newPod("x", "a", "x-0", 10, 15, 20),
			oldPod("x", "b", "x-0", 30), newPod("x", "b", "x-0", 40, 45, 50),
			// Group y overlaps group x in time, which is allowed.
			oldPod("y", "a", "y-0", 5), newPod("y", "a", "y-0", 12, 18, 25),
			oldPod("y", "b", "y-0", 26), newPod("y", "b", "y-0", 40, 45, 60),
		}
		assert.Empty(t, oneAtATimeViolations(recs, atMS(0)))
	})
	t.Run("two of a group unavailable at once", func(t *testing.T) {
		recs := []podRecord{
			oldPod("x", "a", "x-0", 0), newPod("x", "a", "x-0", 10, 15, 40),
			oldPod("x", "b", "x-0", 30), newPod("x", "b", "x-0", 45, 50, 60),
			oldPod("x", "a", "x-1", 70), newPod("x", "a", "x-1", 80, 85, 90),
		}
		v := oneAtATimeViolations(recs, atMS(0))
		require.Len(t, v, 1)
		assert.Equal(t, "b/x-0", v[0].pod)
		assert.Equal(t, "x", v[0].group)
	})
	t.Run("a replacement never Ready makes every later deletion a violation", func(t *testing.T) {
		recs := []podRecord{
			oldPod("x", "a", "x-0", 0), newPod("x", "a", "x-0", 10, -1, -1),
			oldPod("x", "b", "x-0", 500), newPod("x", "b", "x-0", 510, 515, 520),
			oldPod("x", "a", "x-1", 600),
		}
		assert.Len(t, oneAtATimeViolations(recs, atMS(0)), 2)
	})
}
