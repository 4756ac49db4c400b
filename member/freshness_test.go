package member

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestFreshnessGate drives State.Fresh, the gate every deletion passes,
// with an injected clock: a member is fresh only while it answered within
// ProbePeriod, by a probe or a cache event, and not since interrupted.
func TestFreshnessGate(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	r := NewRegistry(Options{ProbePeriod: time.Second, FailureThreshold: 3, Clock: clk})
	in := &instance{name: "k8s-a", ctx: context.Background()}
	r.members["k8s-a"] = &member{}
	old, ok := r.publish("k8s-a", in, nil)
	assert.True(t, ok)
	assert.Nil(t, old)

	at := func(d time.Duration) { clk.SetTime(t0.Add(d)) }
	assert.True(t, r.State("k8s-a").Fresh, "a cache that just synced is fresh")
	at(time.Second)
	assert.True(t, r.State("k8s-a").Fresh, "fresh up to the bound")
	at(time.Second + time.Millisecond)
	assert.False(t, r.State("k8s-a").Fresh, "silent for longer than the bound")
	assert.True(t, r.State("k8s-a").Connected, "still connected: freshness goes long before")

	// A cache event is word from the member.
	in.lastEvent.Store(t0.Add(1500 * time.Millisecond).UnixNano())
	at(2 * time.Second)
	assert.True(t, r.State("k8s-a").Fresh, "an event 500ms ago")
	assert.True(t, t0.Add(1500*time.Millisecond).Equal(r.State("k8s-a").LastHeard), "LastHeard %s", r.State("k8s-a").LastHeard)

	// So is a probe.
	at(3 * time.Second)
	assert.False(t, r.State("k8s-a").Fresh)
	r.recordProbe(context.Background(), in, nil, clk.Now())
	assert.True(t, r.State("k8s-a").Fresh, "a probe answered now")

	// A failed probe ends freshness at once, whatever the time, and it does
	// not come back with time passing or events: only an answer to a probe
	// does.
	timeout := errors.New("GET /readyz: timeout")
	r.recordProbe(context.Background(), in, timeout, clk.Now())
	assert.False(t, r.State("k8s-a").Fresh, "right after a failed probe")
	in.lastEvent.Store(clk.Now().UnixNano())
	assert.False(t, r.State("k8s-a").Fresh, "an event does not undo an interruption")
	assert.True(t, r.State("k8s-a").Connected)
	// One failure and then an answer is a slow answer, not a cut: fresh
	// again at once, with the same cache (no resync).
	r.recordProbe(context.Background(), in, nil, clk.Now())
	assert.True(t, r.State("k8s-a").Fresh, "answered again after a single failed probe")
	assert.False(t, r.members["k8s-a"].resyncing, "a single failed probe needs no resync")
	assert.Same(t, in, r.members["k8s-a"].inst)

	// A refused connection is a cut at once: the watches shared it.
	r.recordProbe(context.Background(), in, fmt.Errorf("GET /readyz: %w", syscall.ECONNREFUSED), clk.Now())
	assert.True(t, r.members["k8s-a"].cutOff, "a refused connection is a cut")
	r.members["k8s-a"].cutOff, r.members["k8s-a"].interrupted, r.members["k8s-a"].failures = false, false, 0

	// Two failures in a row are a cut: freshness comes back only with a
	// new cache (resync), which the next answer starts.
	r.recordProbe(context.Background(), in, timeout, clk.Now())
	r.recordProbe(context.Background(), in, timeout, clk.Now())
	assert.False(t, r.State("k8s-a").Fresh)
	assert.True(t, r.members["k8s-a"].cutOff, "no answer for a whole ProbePeriod")
	r.recordProbe(context.Background(), in, timeout, clk.Now())
	st := r.State("k8s-a")
	assert.False(t, st.Connected, "FailureThreshold failures disconnect")
	assert.Equal(t, ReasonProbeFailed, st.Reason)

	// A broken watch interrupts too.
	in2 := &instance{name: "k8s-a", ctx: context.Background()}
	_, ok = r.publish("k8s-a", in2, nil)
	assert.True(t, ok)
	assert.True(t, r.State("k8s-a").Fresh, "a new cache, just synced")
	r.interrupted(in2)
	assert.False(t, r.State("k8s-a").Fresh, "after a broken watch")
	assert.True(t, r.members["k8s-a"].cutOff, "a broken watch is a cut: only a resync makes it fresh again")
	r.interrupted(in) // an instance no longer running changes nothing
	_, ok = r.publish("k8s-a", in, in)
	assert.False(t, ok, "a resync must not replace an instance that replaced it")
}
