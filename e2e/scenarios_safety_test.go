//go:build e2e

package e2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// Scenarios of the Safe steps and Freshness issues: what a database needs
// to hold when pods, members and rollouts fail. This file sorts before
// scenarios_test.go, so they run before scenario 1 and scenario 10's decoy
// sweep stays last.

// kill deletes pod name in member as a user would (grace period 0), after
// telling the checker it is not fedop's doing.
func (s *scenario) kill(member, name string) {
	s.t.Helper()
	s.checker.External(member, name)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	require.NoError(s.t, s.memberClient(member).Delete(s.t.Context(), pod, client.GracePeriodSeconds(0)), "deleting %s in %s", name, member)
}

// evict evicts pod name in member through the Eviction API, as a node drain
// does, after telling the checker it is not fedop's doing.
func (s *scenario) evict(member, name string) {
	s.t.Helper()
	s.checker.External(member, name)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	eviction := &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}}
	require.NoError(s.t, s.memberClient(member).SubResource("eviction").Create(s.t.Context(), pod, eviction), "evicting %s in %s", name, member)
}

// partition cuts the manager off member until heal, or the end of the test.
func (s *scenario) partition(member string) {
	s.t.Helper()
	require.NoError(s.t, suite.provider.Members.Partition(s.t.Context(), member), "partitioning %s", member)
	s.t.Logf("%s member %s is partitioned from the manager", time.Now().UTC().Format("15:04:05.000"), member)
	s.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if err := suite.provider.Members.Heal(ctx, member); err != nil {
			s.t.Errorf("healing %s: %v", member, err)
		}
	})
}

func (s *scenario) heal(member string) {
	s.t.Helper()
	require.NoError(s.t, suite.provider.Members.Heal(s.t.Context(), member), "healing %s", member)
	s.t.Logf("%s member %s is healed", time.Now().UTC().Format("15:04:05.000"), member)
}

// events returns the notes of the FederationCluster's Events with reason.
func (s *scenario) events(t require.TestingT, reason string) []string {
	var list eventsv1.EventList
	require.NoError(t, suite.host.List(context.Background(), &list, client.InNamespace(s.ns)))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == s.name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// TestScenario12PodsKeepTheirNames deletes one pod and evicts another, as a
// user and a node drain would: each comes back under its name in its
// member, and nothing else changes.
func TestScenario12PodsKeepTheirNames(t *testing.T) {
	s := begin(t, "12 deleted and evicted pods keep names", "identity")
	s.createSample()
	a, b, n := suite.memberA, suite.memberB, s.name
	before := s.livePods(t)

	for _, step := range []struct {
		member, pod string
		remove      func(member, name string)
	}{
		{b, n + "-pd-2", s.kill},
		{a, n + "-tikv-0", s.evict},
	} {
		key := step.member + "/" + step.pod
		step.remove(step.member, step.pod)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			pod, ok := s.livePods(c)[key]
			require.True(c, ok, "%s did not come back", key)
			assert.NotEqual(c, before[key].UID, pod.UID)
			assert.True(c, podwatch.Ready(&pod), "%s is not Ready", key)
		}, settleTimeout, poll)
	}
	s.settle()
	assert.ElementsMatch(t, s.samplePods(), slices.Collect(maps.Keys(s.livePods(t))), "names and members")
	assert.Empty(t, s.checker.Report().DeletionOrder(), "fedop deleted pods")
	s.finish(windowFaults)
}

// TestScenario13PartitionedMemberLosesAPod cuts the manager off k8s-b, kills
// a pod there meanwhile, starts an upgrade, and heals the partition: fedop
// must see the pod gone (its cache of k8s-b is listed again) and bring it
// back before it deletes anything, so never two pods are unavailable.
func TestScenario13PartitionedMemberLosesAPod(t *testing.T) {
	s := begin(t, "13 partition, a pod dies, heal", "partition")
	s.createSample()
	b, n := suite.memberB, s.name
	before := s.livePods(t)

	s.partition(b)
	// The pod dies once fedop reports k8s-b disconnected: fedop cannot
	// have heard of it. (Killed at once, it may die before the partition
	// has cut the watch; fedop then recreates it at once, and a create
	// that times out during the partition may land when it heals: both
	// correct, neither what this scenario is about.)
	s.waitCondition(v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected, names([]string{b}))
	s.kill(b, n+"-tikv-2")
	require.Eventually(t, func() bool { _, ok := s.livePodsIn(t, b)[b+"/"+n+"-tikv-2"]; return !ok }, waitTimeout, poll)
	s.setImages("v8.5.1")
	// The manager cannot hear from k8s-b: no pod may go anywhere. fedop
	// shows it has looked (Progressing waits for k8s-b, silent at first,
	// then disconnected) before the bounded wait.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := s.get(c)
		cond := meta.FindStatusCondition(fc.Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(c, cond)
		require.NotNil(c, fc.Status.Operation)
		assert.Equal(c, v1alpha1.OperationUpgrade, fc.Status.Operation.Type)
		assert.Contains(c, cond.Message, b)
	}, waitTimeout, poll, "Progressing does not say the upgrade waits for %s", b)
	assert.Never(t, func() bool { return len(s.checker.Report().DeletionOrder()) > 0 }, 3*time.Second, poll, "a pod was deleted while k8s-b was partitioned")

	s.heal(b)
	s.settle()
	r := s.checker.Report()
	assert.LessOrEqual(t, r.MaxUnavailable, 1, "pods unavailable at once (at %s):\n%s", r.MaxUnavailableAt.Format("15:04:05.000"), FormatHistory(r.History))
	s.assertOneAtATime(r)
	// tikv-2 came back at the new revision: it is not replaced again.
	order := slices.DeleteFunc(s.sampleUpgradeOrder(), func(key string) bool { return key == b+"/"+n+"-tikv-2" })
	assert.Equal(t, order, r.DeletionOrder())
	after := s.livePods(t)
	assert.ElementsMatch(t, slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after)), "names and members")
	s.finish(windowFaults)
}

// TestScenario14StuckRolloutIsFixedForward rolls out a revision that never
// becomes Ready (an image that cannot be pulled where kubelets run, a node
// selector no node matches in the lab): fedop stops after the first pod,
// says ProgressDeadlineExceeded, and reverting the spec finishes the
// rollout with no manual step: the stuck pod is replaced at once.
func TestScenario14StuckRolloutIsFixedForward(t *testing.T) {
	s := begin(t, "14 stuck rollout, fixed forward", "stuck")
	fc := s.sample()
	fc.Spec.ProgressDeadlineSeconds = ptr.To(int32(10))
	s.create(fc)
	s.settle()
	s.checker.Reset()
	a, n := suite.memberA, s.name
	good := s.get(t).Spec.DeepCopy()

	s.update(func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			c := &fc.Spec.Components[i]
			if suite.cfg.WorkloadImage != "" {
				c.Template.Spec.Containers[0].Image = suite.cfg.WorkloadImage + ":v0.0.0-not-built"
				continue
			}
			for j := range c.Topology {
				// A placement's node selector wins over the template's.
				c.Topology[j].NodeSelector = map[string]string{corev1.LabelTopologyZone: "nowhere"}
			}
		}
	})
	stuck := n + "-pd-1"
	s.waitCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded, names([]string{stuck, a}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, s.events(c, federation.EventProgressDeadlineExceeded), "no Warning Event")
	}, waitTimeout, poll)
	assert.Equal(t, []string{a + "/" + stuck}, s.checker.Report().DeletionOrder(), "only the first pod may go")

	s.update(func(fc *v1alpha1.FederationCluster) { fc.Spec = *good.DeepCopy() })
	s.settle()
	r := s.checker.Report()
	assert.Equal(t, []string{a + "/" + stuck, a + "/" + stuck}, r.DeletionOrder(), "the stuck pod, replaced again at the good revision, and nothing else")
	s.finish(windowFaults)
}

// TestScenario15LostMember takes k8s-b down for good, removes it from every
// topology and moves its replicas to k8s-a, as a user recovering from a
// lost cluster does: the FederationCluster ends Ready, k8s-b leaves status
// with its last known pods named in an Event, and when k8s-b comes back
// after all, fedop removes what is left there.
func TestScenario15LostMember(t *testing.T) {
	s := begin(t, "15 a member lost for good", "lost")
	s.createSample()
	a, b, n := suite.memberA, suite.memberB, s.name
	lost := s.livePodsIn(t, b)
	require.NotEmpty(t, lost)

	s.down(b)
	s.update(func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			c := &fc.Spec.Components[i]
			var keep []v1alpha1.Placement
			moved := int32(0)
			for _, p := range c.Topology {
				if p.Member == b {
					moved += p.Replicas
				} else {
					keep = append(keep, p)
				}
			}
			for j := range keep {
				if keep[j].Member == a {
					keep[j].Replicas += moved
				}
			}
			c.Topology = keep
		}
	})
	// Until fedop gives up on k8s-b (disconnected, after its failure
	// threshold), its pods are being drained; then it leaves status.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := s.get(c)
		for _, m := range fc.Status.Members {
			assert.NotEqual(c, b, m.Name, "the lost member is still in status")
		}
		assertCondition(c, fc, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
		assertCondition(c, fc, v1alpha1.ConditionMembersConnected, metav1.ConditionTrue, v1alpha1.ReasonConnected)
	}, waitTimeout, poll)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		notes := s.events(c, federation.EventMemberForgotten)
		require.NotEmpty(c, notes)
		for key := range lost {
			assert.Contains(c, notes[0], strings.SplitN(key, "/", 2)[1])
		}
	}, waitTimeout, poll)

	// k8s-b comes back after all: what fedop left there goes.
	s.up(b)
	s.settle()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, s.livePodsIn(c, b), "pods left in %s", b)
	}, settleTimeout, poll)
	var svcs corev1.ServiceList
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, s.memberClient(b).List(t.Context(), &svcs, client.InNamespace(s.ns), client.MatchingLabels{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: n,
		}))
		assert.Empty(c, svcs.Items, "Services left in %s", b)
	}, settleTimeout, poll)
	s.finish(windowFaults)
}

// TestScenario16FrozenMember freezes k8s-b's API server for 30 seconds in
// the middle of a rollout whose steps are all in k8s-a. No pod may be
// deleted later than the freshness bound (fedop-manager's
// --member-probe-period, 1s here) after the freeze, and the rollout
// resumes when k8s-b answers again. It reports both times.
func TestScenario16FrozenMember(t *testing.T) {
	s := begin(t, "16 member frozen 30s mid-rollout", "frozen")
	s.createSample()
	a, b := suite.memberA, suite.memberB
	s.update(func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			for j := range fc.Spec.Components[i].Topology {
				if fc.Spec.Components[i].Topology[j].Member == a {
					fc.Spec.Components[i].Topology[j].Env = []corev1.EnvVar{{Name: "RACK", Value: "r2"}}
				}
			}
		}
	})
	s.waitDeletions(1)

	frozen := time.Now()
	s.down(b)
	time.Sleep(30 * time.Second) // the fault's duration, not a wait for a result
	thawed := time.Now()
	s.up(b)
	s.settle()

	r := s.checker.Report()
	var lastDuring, firstAfter time.Time
	for _, d := range r.Deletions {
		switch {
		case d.External:
		case d.At.After(frozen) && d.At.Before(thawed):
			lastDuring = d.At
		case d.At.After(thawed) && firstAfter.IsZero():
			firstAfter = d.At
		}
	}
	bound := time.Second + 500*time.Millisecond // the probe period, plus a status write and a watch's delivery
	if lastDuring.IsZero() {
		t.Logf("freshness: no deletion after the freeze; the rollout resumed %s after the thaw", firstAfter.Sub(thawed).Round(time.Millisecond))
	} else {
		t.Logf("freshness: last deletion %s after the freeze; the rollout resumed %s after the thaw",
			lastDuring.Sub(frozen).Round(time.Millisecond), firstAfter.Sub(thawed).Round(time.Millisecond))
		assert.LessOrEqual(t, lastDuring.Sub(frozen), bound, "a pod was deleted on the word of a member that had stopped answering")
	}
	assert.False(t, firstAfter.IsZero(), "the rollout did not resume after the thaw")
	s.finish(windowFaults)
}
