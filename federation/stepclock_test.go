package federation

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
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

// phaseSum returns the sum and count of the step phase histogram's
// observations for phase.
func phaseSum(t *testing.T, phase string) (float64, uint64) {
	t.Helper()
	var m dto.Metric
	require.NoError(t, stepPhase.WithLabelValues(phase).(prometheus.Histogram).Write(&m))
	return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
}

// TestStepPhases: a step whose deletion was issued splits its overhead,
// from the replaced pod seen Ready, into the reconcile's phases; a queue
// phase that starts before the pod's condition time counts 0.
func TestStepPhases(t *testing.T) {
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(base.Add(100 * time.Millisecond))
	c := newStepClock(clk)
	c.observe(readyPod("a", true, base))
	ms := func(n int) time.Time { return base.Add(time.Duration(100+n) * time.Millisecond) }
	times := &stepTimes{start: ms(2), observed: ms(3), planned: ms(5), acknowledged: ms(5), deleteSent: ms(6), deleted: ms(10)}
	want := map[string]float64{"queue": 0.002, "observe": 0.001, "plan": 0.002, "status": 0, "act": 0.001, "delete": 0.004}
	// The histogram is the package's: other tests' steps (with made-up
	// times) are in it, and none runs in parallel with this one.
	stepPhase.Reset()

	before := map[string]float64{}
	counts := map[string]uint64{}
	for phase := range want {
		before[phase], counts[phase] = phaseSum(t, phase)
	}
	key := client.ObjectKey{Namespace: "db", Name: "demo"}
	done := rollout.Plan{Completed: &rollout.PodRef{Name: "demo-pd-0", UID: "a"}, CompletedAt: base}
	c.record(key, v1alpha1.OperationUpgrade, done, false, times)
	for phase := range want {
		_, n := phaseSum(t, phase)
		assert.Equal(t, counts[phase], n, "no deletion issued: no phases observed")
	}
	c.record(key, v1alpha1.OperationUpgrade, done, true, times)
	for phase, d := range want {
		sum, n := phaseSum(t, phase)
		assert.Equal(t, counts[phase]+1, n, phase)
		assert.InDelta(t, d, sum-before[phase], 1e-9, phase)
	}

	// The condition's time later than the reconcile's start: queue is 0.
	queued, _ := phaseSum(t, "queue")
	late := rollout.Plan{Completed: &rollout.PodRef{Name: "demo-pd-1", UID: "b"}, CompletedAt: ms(4)}
	c.record(key, v1alpha1.OperationUpgrade, late, true, times)
	sum, _ := phaseSum(t, "queue")
	assert.InDelta(t, queued, sum, 1e-9)
}
