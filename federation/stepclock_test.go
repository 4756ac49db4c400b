package federation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func readyPod(uid types.UID, ready bool, since time.Time) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since)},
		}},
	}
}

func TestStepClock(t *testing.T) {
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(base)
	c := newStepClock(clk)
	now := base
	at := func(t time.Time) { now = t; clk.SetTime(t) }

	// Ready at 09:00:00 by its condition (truncated), seen at .700.
	at(base.Add(700 * time.Millisecond))
	c.observe(readyPod("a", true, base))
	// A later event of the same pod does not move the first sighting.
	at(base.Add(900 * time.Millisecond))
	c.observe(readyPod("a", true, base))
	assert.Equal(t, base.Add(700*time.Millisecond), c.availableAt("a", base), "the sighting is later than the condition")
	assert.Equal(t, base, c.availableAt("a", base), "a step completes once: the sighting is forgotten")

	// minReadySeconds puts availability after the sighting: the condition wins.
	at(base.Add(300 * time.Millisecond))
	c.observe(readyPod("b", true, base))
	assert.Equal(t, base.Add(2*time.Second), c.availableAt("b", base.Add(2*time.Second)))

	// Not Ready, terminating, or Ready long ago (a pod seen at startup):
	// nothing noted.
	c.observe(readyPod("c", false, base))
	terminating := readyPod("d", true, base)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	c.observe(terminating)
	at(base.Add(time.Hour))
	c.observe(readyPod("e", true, base))
	for _, uid := range []types.UID{"c", "d", "e"} {
		assert.Equal(t, base, c.availableAt(uid, base), "pod %s", uid)
	}

	// Sightings that were never used are dropped after keepFor.
	c.observe(readyPod("f", true, now))
	at(now.Add(keepFor + time.Second))
	c.observe(readyPod("g", true, now))
	c.mu.Lock()
	_, kept := c.seen["f"]
	c.mu.Unlock()
	assert.False(t, kept, "stale sighting kept")
}
