package federation_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/member"
)

// Integration tests of the Safe steps and Freshness issues: each defect on
// real API servers, the way a user or a fault would bring it about.

// setPodStatus changes the status of pod name in member with edit,
// through the member's API server directly (as its kubelet would).
func setPodStatus(t *testing.T, s *scenario, memberName, name string, edit func(*corev1.Pod)) {
	t.Helper()
	c := s.env.Member(memberName).Client
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pod corev1.Pod
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, &pod); err != nil {
			return err
		}
		edit(&pod)
		return c.Status().Update(context.Background(), &pod)
	}))
}

func setReady(ready bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		setPodCondition(p, corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()})
	}
}

// hostEvents returns the reasons and notes of the Events about fc.
func hostEvents(t require.TestingT, s *scenario) map[string][]string {
	var list eventsv1.EventList
	require.NoError(t, s.env.Host.Client.List(context.Background(), &list, client.InNamespace(s.ns)))
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Name == s.key.Name {
			out[e.Reason] = append(out[e.Reason], e.Note)
		}
	}
	return out
}

// progressingMessage returns fc's Progressing condition, or a zero one.
func progressing(t require.TestingT, s *scenario) metav1.Condition {
	c := meta.FindStatusCondition(getFC(t, s.env, s.key).Status.Conditions, v1alpha1.ConditionProgressing)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

// TestReplayedDeletionIsRechecked is defect 1: status.operation names pod
// P and its UID, acknowledged by a manager that died before deleting it.
// Meanwhile another pod went NotReady. A new manager must not delete P: the
// replay passes the checks of a new step, fails them, and the step is
// dropped and planned again. Once the other pod is Ready the upgrade
// completes, one pod at a time.
func TestReplayedDeletionIsRechecked(t *testing.T) {
	s := initialized(t, "replay")
	s.fedop.stop(t)
	before := memberPods(t, s.env, s.ns)
	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	setPodStatus(t, s, memberB, fcName+"-tikv-2", setReady(false))

	// The lock as a manager that died after acknowledging would leave it.
	p := before[memberA+"/"+fcName+"-pd-1"]
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := getFC(t, s.env, s.key)
		fc.Status.Operation = &v1alpha1.Operation{
			Type: v1alpha1.OperationUpgrade, Component: "pd", Member: memberA, Pod: p.Name, PodUID: p.UID,
			Holder: "a-manager-that-died", StartedTime: metav1.Now(),
		}
		return s.env.Host.Client.Status().Update(context.Background(), fc)
	}))
	s.checker.reset()

	second := startFedop(t, s.env, s.ns+"-2")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := getFC(c, s.env, s.key)
		require.NotNil(c, fc.Status.Operation)
		assert.Equal(c, second.identity, fc.Status.Operation.Holder)
		assert.Empty(c, fc.Status.Operation.Pod, "the recorded step is still held")
		want := "step on pod " + p.Name + " in " + memberA + " dropped: pod " + fcName + "-tikv-2 in " + memberB + " is not Ready"
		assert.Contains(c, hostEvents(c, s)[federation.EventStepDropped], want)
	}, wait, tick, "the new manager did not drop the recorded step")
	// fedop has evaluated, above, the state in which the old code deleted
	// P at once: a bounded wait for a deletion that must not come.
	assert.Never(t, func() bool { return len(s.checker.report().deletions) > 0 }, 2*time.Second, tick, "a pod was deleted while another was NotReady")

	setPodStatus(t, s, memberB, fcName+"-tikv-2", setReady(true))
	requireSettled(t, s.env, s.key)
	// The dropped step was in k8s-a, so members take turns from k8s-b.
	assertUpgraded(t, s, before, []string{
		"k8s-b/demo-pd-2", "k8s-a/demo-pd-1", "k8s-a/demo-pd-0",
		"k8s-a/demo-tikv-1", "k8s-b/demo-tikv-3", "k8s-a/demo-tikv-0", "k8s-b/demo-tikv-2",
		"k8s-a/demo-tidb-0",
	})
}

// TestReconnectedMemberIsResyncedBeforeAnyStep is defect 2: a member is cut
// off, a pod there dies while it is, and the member comes back. No step may
// be taken anywhere until fedop sees that pod missing: the member counts as
// connected only with a cache listed after it answered again.
func TestReconnectedMemberIsResyncedBeforeAnyStep(t *testing.T) {
	s := initialized(t, "resync")
	proxy := s.env.Member(memberB).Proxy
	proxy.Sever()
	t.Cleanup(proxy.Restore)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assertCondition(c, getFC(c, s.env, s.key), v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected)
	}, wait, tick, "k8s-b was not reported disconnected")
	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	// The pod fedop would delete first in k8s-b dies while fedop cannot
	// see it.
	dead := fcName + "-pd-2"
	deadPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: dead}}
	require.NoError(t, s.env.Member(memberB).Client.Delete(context.Background(), deadPod, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool { _, ok := memberPods(t, s.env, s.ns)[memberB+"/"+dead]; return !ok }, wait, tick)
	s.checker.reset()

	proxy.Restore()
	requireSettled(t, s.env, s.key)
	r := s.checker.report()
	assert.LessOrEqual(t, r.maxUnavailable, 1, "pods unavailable at once:\n%s", strings.Join(r.history, "\n"))
	assert.Equal(t, make([]int, len(r.deletions)), r.unavailableAtDeletion, "a pod was deleted while %s was missing:\n%s", dead, strings.Join(r.history, "\n"))
	require.NotEmpty(t, r.history)
	assert.Equal(t, "create "+memberB+"/"+dead, r.history[0], "the dead pod must come back before anything else happens")
}

// TestExternallyDeletedPodKeepsItsName is defect 3: a pod deleted by
// someone else comes back under its name, in its member, and nothing else
// changes.
func TestExternallyDeletedPodKeepsItsName(t *testing.T) {
	s := initialized(t, "identity")
	before := memberPods(t, s.env, s.ns)
	ordinals := func() []string {
		var out []string
		for _, cs := range getFC(t, s.env, s.key).Status.Components {
			for _, ps := range cs.Members {
				out = append(out, cs.Name+"/"+ps.Member+":"+ps.Ordinals)
			}
		}
		return out
	}
	recorded := ordinals()
	for _, key := range []string{memberB + "/" + fcName + "-tikv-2", memberA + "/" + fcName + "-pd-0"} {
		m, name, _ := strings.Cut(key, "/")
		victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
		require.NoError(t, s.env.Member(m).Client.Delete(context.Background(), victim, client.GracePeriodSeconds(0)))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			pod, ok := memberPods(c, s.env, s.ns)[key]
			require.True(c, ok, "%s did not come back", key)
			assert.NotEqual(c, before[key].UID, pod.UID)
			ready := podwatch.Ready(&pod)
			assert.True(c, ready)
		}, wait, tick)
	}
	requireSettled(t, s.env, s.key)
	assert.ElementsMatch(t, initialPods, slices.Collect(maps.Keys(memberPods(t, s.env, s.ns))), "names and members")
	assert.Equal(t, recorded, ordinals(), "the recorded ordinals")
	s.decoys.assertUntouched(t)
}

// TestOrdinalsWhileAMemberIsPartitioned is defect 4: with k8s-b cut off,
// pd grows in k8s-a. The new pod must not take ordinal 2, which k8s-b holds
// (demo-pd-2, out of sight): two pods would share a name once k8s-b is
// back.
func TestOrdinalsWhileAMemberIsPartitioned(t *testing.T) {
	s := initialized(t, "partition")
	proxy := s.env.Member(memberB).Proxy
	proxy.Sever()
	t.Cleanup(proxy.Restore)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assertCondition(c, getFC(c, s.env, s.key), v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected)
	}, wait, tick)

	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) { fc.Spec.Components[0].Topology[0].Replicas = 3 })
	require.Eventually(t, func() bool { _, ok := memberPods(t, s.env, s.ns)[memberA+"/"+fcName+"-pd-3"]; return ok }, wait, tick,
		"no new pd pod in k8s-a")
	_, taken := memberPods(t, s.env, s.ns)[memberA+"/"+fcName+"-pd-2"]
	assert.False(t, taken, "k8s-a got pd-2, which k8s-b holds")

	proxy.Restore()
	requireSettled(t, s.env, s.key)
	members := map[string][]string{}
	for key, pod := range memberPods(t, s.env, s.ns) {
		members[pod.Name] = append(members[pod.Name], strings.SplitN(key, "/", 2)[0])
	}
	for name, ms := range members {
		assert.Len(t, ms, 1, "pod %s lives in %v", name, ms)
	}
	s.decoys.assertUntouched(t)
}

// TestFailedPodIsReplacedUnderItsName is defect 5: a pod in phase Failed
// (evicted, say) is deleted and comes back under its name, and an Event
// says so.
func TestFailedPodIsReplacedUnderItsName(t *testing.T) {
	s := initialized(t, "failed")
	key := memberA + "/" + fcName + "-tikv-1"
	before := memberPods(t, s.env, s.ns)[key]
	setPodStatus(t, s, memberA, fcName+"-tikv-1", func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Evicted"
		setReady(false)(p)
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod, ok := memberPods(c, s.env, s.ns)[key]
		require.True(c, ok)
		assert.NotEqual(c, before.UID, pod.UID, "the failed pod was not replaced")
		assert.Equal(c, corev1.PodRunning, pod.Status.Phase)
	}, wait, tick)
	requireSettled(t, s.env, s.key)
	assert.ElementsMatch(t, initialPods, slices.Collect(maps.Keys(memberPods(t, s.env, s.ns))))
	assert.NotEmpty(t, hostEvents(t, s)[federation.EventFailedPodReplaced], "no %s Event", federation.EventFailedPodReplaced)
}

// TestNoDeletionOnTheWordOfASilentMember is the Freshness issue: k8s-b stops
// answering (its connections hang, as with SIGSTOP) in the middle of a
// rollout whose steps are all in k8s-a. No pod is deleted anywhere later
// than the freshness bound after k8s-b last answered, long before k8s-b is
// declared disconnected; the rollout resumes when it answers again.
func TestNoDeletionOnTheWordOfASilentMember(t *testing.T) {
	s := initialized(t, "silent")
	before := memberPods(t, s.env, s.ns)
	// Every component's k8s-a placement changes: every step is in k8s-a.
	release := s.kubelet.hold(t, s.ns, fcName+"-pd-1")
	s.checker.reset()
	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			fc.Spec.Components[i].Topology[0].Env = []corev1.EnvVar{{Name: "RACK", Value: "r2"}}
		}
	})
	requireDeletions(t, s.checker, 1)

	proxy := s.env.Member(memberB).Proxy
	proxy.Freeze()
	frozen := time.Now()
	t.Cleanup(proxy.Thaw)
	lastAnswer := proxy.LastAnswer()
	// Release the first step's replacement once fedop knows that k8s-b is
	// silent: the next deletion (in k8s-a) must now wait for k8s-b. A
	// sleep past the bound would not do: fedop stamps an answer when it
	// handles it, which on a loaded machine can be well after the bytes
	// passed the proxy. A probe recorded after the freeze may have been
	// sent before it; the next one cannot have been, so it fails (its
	// request is held) and k8s-b is not fresh until an answer, which the
	// freeze holds.
	requireFailedProbeSince(t, s.fedop.registry, memberB, frozen)
	release()
	// The step's replacement changes k8s-b's EndpointSlices too, and a
	// reconcile that began to write them while k8s-b still counted as fresh
	// waits for the write's deadline: by then the probes may have found
	// k8s-b disconnected, which blocks deletions as silence does.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := progressing(c, s)
		assert.Contains(c, []string{v1alpha1.ReasonMemberSilent, v1alpha1.ReasonMemberDisconnected}, cond.Reason, "%s", cond.Message)
		assert.Contains(c, cond.Message, memberB)
	}, wait, tick, "Progressing does not say that k8s-b is silent or disconnected")
	// fedop has evaluated, above, the state in which it would take the next
	// step: a bounded wait for a deletion that must not come.
	assert.Never(t, func() bool { return len(s.checker.report().deletions) > 1 }, 2*time.Second, tick, "a pod was deleted while k8s-b was silent")
	thawed := time.Now()
	proxy.Thaw()
	requireSettled(t, s.env, s.key)

	r := s.checker.report()
	require.Len(t, r.deletions, 5)
	for i, at := range r.deletionTimes {
		// A deletion the checker saw before the freeze (the first step's,
		// waited for above) was made while k8s-b answered; when its watch
		// delivered it says nothing of k8s-b's last answer before the
		// freeze, which can be older by more than the bound on a loaded
		// machine.
		if at.After(frozen) && at.After(lastAnswer.Add(probePeriod)) && at.Before(thawed) {
			t.Errorf("deletion of %s at %s, %s after k8s-b last answered (bound %s)", r.deletions[i], at.Format("15:04:05.000"), at.Sub(lastAnswer), probePeriod)
		}
	}
	t.Logf("k8s-b last answered %s; thawed %s; deletions %v at %v",
		lastAnswer.Format("15:04:05.000"), thawed.Format("15:04:05.000"), r.deletions, formatTimes(r.deletionTimes))
	assertUpgraded(t, s, before, []string{
		memberA + "/" + fcName + "-pd-1", memberA + "/" + fcName + "-pd-0",
		memberA + "/" + fcName + "-tikv-1", memberA + "/" + fcName + "-tikv-0",
		memberA + "/" + fcName + "-tidb-0",
	})
}

// requireFailedProbeSince waits until reg has recorded a failed probe of
// member sent after since: two probes recorded after since, the second
// sent after the first was recorded (a registry probes a member one probe
// at a time), and the member not fresh.
func requireFailedProbeSince(t *testing.T, reg *member.Registry, memberName string, since time.Time) {
	t.Helper()
	var first time.Time
	require.Eventually(t, func() bool {
		first = reg.State(memberName).LastProbeTime
		return first.After(since)
	}, wait, tick, "no probe of %s recorded since %s", memberName, since.Format("15:04:05.000"))
	require.Eventually(t, func() bool {
		st := reg.State(memberName)
		return st.LastProbeTime.After(first) && !st.Fresh
	}, wait, tick, "no failed probe of %s sent since %s", memberName, since.Format("15:04:05.000"))
}

func formatTimes(ts []time.Time) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Format("15:04:05.000"))
	}
	return fmt.Sprint(out)
}

// TestReleaseAnnotationDropsTheOperation: a user releases the held
// operation by hand; fedop drops it, says who asked, and plans again.
func TestReleaseAnnotationDropsTheOperation(t *testing.T) {
	s := initialized(t, "release")
	release := s.kubelet.hold(t, s.ns, fcName+"-pd-1")
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	requireDeletions(t, s.checker, 1)
	var started metav1.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		op := getFC(c, s.env, s.key).Status.Operation
		require.NotNil(c, op)
		started = op.StartedTime
	}, wait, tick)

	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) {
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[v1alpha1.AnnotationReleaseOperation] = started.UTC().Format(time.RFC3339)
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		notes := hostEvents(c, s)[federation.EventOperationReleased]
		require.NotEmpty(c, notes, "no %s Event", federation.EventOperationReleased)
		assert.Contains(c, notes[0], "released at the request of")
	}, wait, tick)
	release()
	requireSettled(t, s.env, s.key)
	assert.LessOrEqual(t, s.checker.report().maxUnavailable, 1)
}
