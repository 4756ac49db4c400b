package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// These tests feed the checker's ledger made-up events: they run in every
// build (no cluster), unlike the scenarios.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// testPod is pod name of component pd.
func testPod(name string, uid types.UID, ready, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, Labels: map[string]string{v1alpha1.LabelComponent: "pd"}}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if terminating {
		now := metav1.NewTime(t0)
		p.DeletionTimestamp = &now
	}
	return p
}

func twoPodSpec(replicasA, replicasB int32) *v1alpha1.FederationClusterSpec {
	return &v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{{
		Name:     "pd",
		Topology: []v1alpha1.Placement{{Member: "a", Replicas: replicasA}, {Member: "b", Replicas: replicasB}},
	}}}
}

func TestLedgerRollingUpgrade(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(1, 1), false, at(0))
	assert.Equal(t, 0, l.unavailable.Now, "nothing exists yet: no replica was ever up")
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("b", testPod("x-pd-1", "b1", true, false), false, at(2))
	require.Equal(t, 0, l.unavailable.Now)
	l.reset(at(3))

	// Step 1: a's pod replaced; Ready at 1000.
	l.pod("a", testPod("x-pd-0", "a0", true, true), false, at(100))
	l.pod("a", testPod("x-pd-0", "a0", true, true), true, at(150))
	l.pod("a", testPod("x-pd-0", "a0-new", false, false), false, at(200))
	l.pod("a", testPod("x-pd-0", "a0-new", true, false), false, at(1000))
	// Step 2: b's pod, deleted 1100ms after the replacement became Ready.
	l.pod("b", testPod("x-pd-1", "b1", true, true), false, at(2100))
	l.pod("b", testPod("x-pd-1", "b1", true, true), true, at(2150))
	l.pod("b", testPod("x-pd-1", "b1-new", true, false), false, at(2300))

	r := l.report(at(3000))
	assert.Equal(t, 1, r.MaxUnavailable)
	assert.Equal(t, 0, r.Unavailable)
	assert.Equal(t, []string{"a/x-pd-0", "b/x-pd-1"}, r.DeletionOrder())
	assert.Equal(t, []int{0, 0}, []int{r.Deletions[0].UnavailableBefore, r.Deletions[1].UnavailableBefore})
	require.Len(t, r.Steps, 1)
	assert.Equal(t, 1100*time.Millisecond, r.Steps[0].Overhead)
	assert.Equal(t, "ready", r.Steps[0].After)
	assert.Empty(t, r.Overlaps)
}

func TestLedgerOverlapAndLateEvents(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(1, 1), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("b", testPod("x-pd-1", "b1", true, false), false, at(2))
	l.reset(at(3))
	l.pod("a", testPod("x-pd-0", "a0", true, true), false, at(100))
	// b's pod goes before a's replacement exists: two unavailable.
	l.pod("b", testPod("x-pd-1", "b1", true, false), true, at(200))
	// A late update of a gone instance changes nothing.
	l.pod("b", testPod("x-pd-1", "b1", true, false), false, at(300))

	r := l.report(at(400))
	assert.Equal(t, 2, r.MaxUnavailable)
	assert.Equal(t, at(200), r.MaxUnavailableAt)
	assert.Equal(t, 1, r.Deletions[1].UnavailableBefore)
	assert.Len(t, r.Overlaps, 1)
	assert.Empty(t, r.Steps)
}

func TestLedgerExpectAndDeletion(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(2, 0), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("a", testPod("x-pd-1", "a1", true, false), false, at(2))
	l.reset(at(3))

	// Scale-in announced before it is written: the removal costs nothing,
	// and a stale host event of the old generation does not undo it.
	l.expect(twoPodSpec(1, 0), at(10))
	l.spec(1, twoPodSpec(2, 0), false, at(11))
	l.pod("a", testPod("x-pd-1", "a1", true, true), false, at(20))
	l.spec(2, twoPodSpec(1, 0), false, at(30))
	l.pod("a", testPod("x-pd-1", "a1", true, true), true, at(40))
	assert.Equal(t, 0, l.report(at(50)).MaxUnavailable)

	// Deleting the FederationCluster: nothing is desired any more.
	l.spec(3, twoPodSpec(1, 0), true, at(60))
	l.pod("a", testPod("x-pd-0", "a0", true, true), false, at(70))
	r := l.report(at(80))
	assert.Equal(t, 0, r.MaxUnavailable)
	assert.Equal(t, 0, r.Desired)
	require.Len(t, r.Steps, 1)
	assert.Equal(t, "gone", r.Steps[0].After)
	assert.Equal(t, 30*time.Millisecond, r.Steps[0].Overhead)
}

// A scale-out that later reuses a removed pod's name must not turn the
// earlier scale-in steps into overlaps.
func TestLedgerScaleInThenOut(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(2, 0), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("a", testPod("x-pd-1", "a1", true, false), false, at(2))
	l.reset(at(3))
	l.expect(twoPodSpec(0, 0), at(10))
	l.pod("a", testPod("x-pd-1", "a1", true, true), false, at(20))
	l.pod("a", testPod("x-pd-1", "a1", true, true), true, at(30))
	l.pod("a", testPod("x-pd-0", "a0", true, true), false, at(45))
	l.pod("a", testPod("x-pd-0", "a0", true, true), true, at(50))
	l.expect(twoPodSpec(1, 0), at(100))
	l.pod("a", testPod("x-pd-1", "a1-again", false, false), false, at(110))
	l.pod("a", testPod("x-pd-1", "a1-again", true, false), false, at(120))

	r := l.report(at(200))
	assert.Empty(t, r.Overlaps)
	require.Len(t, r.Steps, 1)
	assert.Equal(t, "gone", r.Steps[0].After)
	assert.Equal(t, 15*time.Millisecond, r.Steps[0].Overhead)
	assert.Equal(t, 0, r.MaxUnavailable, "the scale-out's pod, before it was Ready, was never a replica to lose")
}

// A scale-out's new pods are not unavailable replicas; once up, they are.
func TestLedgerScaleOutThenUpgrade(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(1, 0), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.reset(at(2))
	l.expect(twoPodSpec(3, 0), at(10))
	assert.Equal(t, 0, l.unavailable.Now, "two pods to add")
	l.pod("a", testPod("x-pd-1", "a1", false, false), false, at(20))
	l.pod("a", testPod("x-pd-1", "a1", true, false), false, at(30))
	l.pod("a", testPod("x-pd-2", "a2", true, false), false, at(40))
	// Now every replica was up: losing one counts.
	l.pod("a", testPod("x-pd-2", "a2", true, true), false, at(50))
	assert.Equal(t, 1, l.unavailable.Now)
	l.pod("a", testPod("x-pd-1", "a1", true, true), false, at(60))
	assert.Equal(t, 2, l.report(at(70)).MaxUnavailable)
}

// An upgrade step whose pod is gone but not yet replaced has not ended.
func TestLedgerDeletionBeforeReplacement(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(1, 1), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("b", testPod("x-pd-1", "b1", true, false), false, at(2))
	l.reset(at(3))
	l.pod("a", testPod("x-pd-0", "a0", true, true), true, at(10))
	l.pod("b", testPod("x-pd-1", "b1", true, true), false, at(20))
	r := l.report(at(30))
	assert.Len(t, r.Overlaps, 1)
	assert.Equal(t, 2, r.MaxUnavailable)
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 50*time.Millisecond, Percentile(ds, 50))
	assert.Equal(t, 99*time.Millisecond, Percentile(ds, 99))
	assert.Equal(t, 100*time.Millisecond, Percentile(ds, 100))
	assert.Equal(t, time.Duration(0), Percentile(nil, 50))
	assert.Equal(t, 7*time.Millisecond, Percentile([]time.Duration{7 * time.Millisecond}, 99))
}

func TestParseMembers(t *testing.T) {
	m, err := ParseMembers("k8s-a=/x/a.kubeconfig, k8s-b=/x/b.kubeconfig")
	require.NoError(t, err)
	assert.Equal(t, []MemberCluster{{"k8s-a", "/x/a.kubeconfig"}, {"k8s-b", "/x/b.kubeconfig"}}, m)
	for _, bad := range []string{"k8s-a", "=x", "a=", "a=x,a=y"} {
		_, err := ParseMembers(bad)
		assert.Error(t, err, bad)
	}
}

// A replica that goes down by itself, or that the test deletes, is
// excused: fedop is held to the replicas it takes down. A deletion by fedop
// while another replica is down counts against it.
func TestLedgerExcusesWhatFedopDidNotDo(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(2, 1), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("a", testPod("x-pd-1", "a1", true, false), false, at(2))
	l.pod("b", testPod("x-pd-2", "b2", true, false), false, at(3))
	l.reset(at(4))

	// a1 crashes (not Ready, not deleted): excused.
	l.pod("a", testPod("x-pd-1", "a1", false, false), false, at(10))
	assert.Equal(t, 1, l.unavailable.Now)
	assert.Equal(t, 0, l.disrupted.Now)
	// The test deletes b2, announced: excused, and not fedop's deletion.
	l.External("b", "x-pd-2")
	l.pod("b", testPod("x-pd-2", "b2", true, true), false, at(20))
	assert.Equal(t, 2, l.unavailable.Now)
	assert.Equal(t, 0, l.disrupted.Now)
	// fedop replaces the crashed pod: it was down already, costs nothing.
	l.pod("a", testPod("x-pd-1", "a1", false, true), false, at(30))
	// fedop deletes a0 while b2 is still down: that counts.
	l.pod("a", testPod("x-pd-0", "a0", true, true), false, at(40))
	r := l.report(at(50))
	assert.Equal(t, []string{"a/x-pd-1", "a/x-pd-0"}, r.DeletionOrder(), "the test's own deletion is not fedop's")
	require.Len(t, r.Deletions, 3)
	assert.True(t, r.Deletions[0].External)
	assert.Equal(t, 0, r.Deletions[1].DisruptedBefore, "replacing a crashed pod")
	assert.Equal(t, 0, r.Deletions[2].DisruptedBefore, "the crashed and the deleted pods are excused")
	assert.Equal(t, 1, r.MaxDisrupted)
	// Once b2's name is Ready again, it is no longer excused.
	l.pod("b", testPod("x-pd-2", "b2-new", true, false), false, at(60))
	assert.Empty(t, l.excused["b/x-pd-2"])
}

// Two live pods with one name in two members are reported.
func TestLedgerDuplicateNames(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(1, 1), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("b", testPod("x-pd-1", "b1", true, false), false, at(2))
	assert.Empty(t, l.report(at(3)).Duplicates)
	l.pod("b", testPod("x-pd-0", "b0", false, false), false, at(4))
	assert.Len(t, l.report(at(5)).Duplicates, 1)
	// A replacement of the same name in the same member is no duplicate.
	l.pod("a", testPod("x-pd-0", "a0", true, false), true, at(6))
	l.pod("a", testPod("x-pd-0", "a0-new", false, false), false, at(7))
	assert.Len(t, l.report(at(8)).Duplicates, 2, "b0 still lives while a's new x-pd-0 appears")
}

// TestLedgerUnavailableVictims: a pod that turns not Ready by itself after
// fedop's previous deletion is marked Unavailable when deleted (fedop
// replaces such pods first); one that was Ready throughout is not, nor is
// one whose blip came before the previous deletion.
func TestLedgerUnavailableVictims(t *testing.T) {
	l := newLedger(at(0))
	l.spec(1, twoPodSpec(2, 1), false, at(0))
	l.pod("a", testPod("x-pd-0", "a0", true, false), false, at(1))
	l.pod("a", testPod("x-pd-1", "a1", true, false), false, at(2))
	l.pod("b", testPod("x-pd-2", "b2", true, false), false, at(3))
	// b's pod blips before any deletion: long before its turn.
	l.pod("b", testPod("x-pd-2", "b2", false, false), false, at(10))
	l.pod("b", testPod("x-pd-2", "b2", true, false), false, at(20))
	l.reset(at(30))

	// a/x-pd-1 goes not Ready by itself and is deleted first.
	l.pod("a", testPod("x-pd-1", "a1", false, false), false, at(100))
	l.pod("a", testPod("x-pd-1", "a1", false, true), false, at(200))
	l.pod("a", testPod("x-pd-1", "a1", false, true), true, at(250))
	l.pod("a", testPod("x-pd-1", "a1-new", true, false), false, at(1000))
	// Then a/x-pd-0, Ready throughout.
	l.pod("a", testPod("x-pd-0", "a0", true, true), false, at(2000))
	l.pod("a", testPod("x-pd-0", "a0", true, true), true, at(2050))
	l.pod("a", testPod("x-pd-0", "a0-new", true, false), false, at(3000))
	// b/x-pd-2 blips after that deletion, is Ready again, then deleted.
	l.pod("b", testPod("x-pd-2", "b2", false, false), false, at(3500))
	l.pod("b", testPod("x-pd-2", "b2", true, false), false, at(3600))
	l.pod("b", testPod("x-pd-2", "b2", true, true), false, at(4000))

	r := l.report(at(5000))
	assert.Equal(t, []string{"a/x-pd-1", "a/x-pd-0", "b/x-pd-2"}, r.DeletionOrder())
	assert.Equal(t, []bool{true, false, true}, []bool{r.Deletions[0].Unavailable, r.Deletions[1].Unavailable, r.Deletions[2].Unavailable})
	assert.Equal(t, []string{"a/x-pd-0"}, r.AvailableOrder())
	assert.Equal(t, []string{"a/x-pd-1", "b/x-pd-2"}, r.UnavailableDeleted())
}
