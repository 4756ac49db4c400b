//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Scenarios of the Hooks issue. Scenario 18 needs pods that answer (the
// workload image's /drain, /undrain, /health and /calls): kind only; the
// lab's pods are kwok's, with no process behind them. Scenario 19 (the
// partition) runs on both.

// podGet makes GET path on pod name in member through the member API
// server's pod proxy, on the workload's port, and returns the body.
func (s *scenario) podGet(member, name, path string) (string, error) {
	cs, err := kubernetes.NewForConfig(suite.memberConfigs[s.clusters[member]])
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(s.t.Context(), 10*time.Second)
	defer cancel()
	body, err := cs.CoreV1().Pods(s.ns).ProxyGet("", name, strconv.Itoa(suite.cfg.WorkloadPort), path, nil).DoRaw(ctx)
	return string(body), err
}

// callLog is the workload's call log of one pod (GET /calls): per
// instance (a "start" line each), the hooks called, in order.
func (s *scenario) callLog(member, name string) [][]string {
	s.t.Helper()
	body, err := s.podGet(member, name, "calls")
	require.NoError(s.t, err, "GET /calls of %s in %s", name, member)
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "start":
			out = append(out, nil)
		case len(out) > 0 && f[0] != "health":
			out[len(out)-1] = append(out[len(out)-1], f[0])
		}
	}
	return out
}

// withLifecycle gives the sample's pd and tikv (the components with a
// volume, which keeps the call log across replacements) a preDelete hook
// /drain with undo /undrain (timeout, Halt) and a /health gate of scope
// Component.
func withLifecycle(fc *v1alpha1.FederationCluster, drainPath string, timeout int32) {
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		if c.Name != "pd" && c.Name != "tikv" {
			continue
		}
		port := intstr.FromInt32(int32(suite.cfg.WorkloadPort))
		c.Lifecycle = &v1alpha1.Lifecycle{
			PreDelete: &v1alpha1.PreDeleteHook{
				HTTPGet:        v1alpha1.HTTPGetHook{Path: drainPath, Port: port},
				Undo:           &v1alpha1.HTTPGetHook{Path: "/undrain", Port: port},
				TimeoutSeconds: timeout,
				OnTimeout:      v1alpha1.HookTimeoutHalt,
			},
			PostReady: &v1alpha1.PostReadyHook{HTTPGet: v1alpha1.HTTPGetHook{Path: "/health", Port: port}, Scope: v1alpha1.HookScopeComponent, TimeoutSeconds: 120},
		}
	}
}

// denyDeletion makes member's API server refuse to delete pod name of the
// scenario, with a ValidatingAdmissionPolicy, until the returned func is
// called or the test ends.
func (s *scenario) denyDeletion(member, name string) func() {
	s.t.Helper()
	c := s.memberClient(member)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-keep-" + s.ns + "-" + name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{name},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "the e2e suite keeps this pod"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: s.ns},
			}},
		},
	}
	require.NoError(s.t, c.Create(s.t.Context(), policy))
	require.NoError(s.t, c.Create(s.t.Context(), binding))
	require.EventuallyWithT(s.t, func(col *assert.CollectT) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
		err := c.Delete(context.Background(), pod, client.DryRunAll)
		assert.True(col, err != nil && !apierrors.IsNotFound(err), "the policy is not enforced yet (%v)", err)
	}, waitTimeout, poll)
	var once sync.Once
	lift := func() {
		once.Do(func() {
			ctx, cancel := cleanupContext()
			defer cancel()
			_ = c.Delete(ctx, binding)
			_ = c.Delete(ctx, policy)
		})
	}
	s.t.Cleanup(lift)
	return lift
}

// waitStage waits until status.operation is at stage on pod.
func (s *scenario) waitStage(pod string, stage v1alpha1.StepStage) {
	s.t.Helper()
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		op := s.get(c).Status.Operation
		require.NotNil(c, op, "no operation")
		assert.Equal(c, pod, op.Pod)
		assert.Equal(c, stage, op.Stage)
	}, settleTimeout, poll, "stage %s of pod %s", stage, pod)
}

// TestScenario18Hooks: the sample's pd and tikv drain each pod before it
// is deleted and gate each step on /health, with real pods answering
// through each member's pod proxy:
//
//  1. an upgrade, with the manager SIGKILLed between the first drain and
//     its deletion (the member refuses the deletion until the new manager
//     runs) and /health failing on a tikv pod when tikv's turn comes: every
//     deleted pod is drained exactly once, the rollout stops before tikv's
//     first deletion until /health passes;
//  2. a drained pod's deletion called off by reverting the image: undone;
//  3. a preDelete hook that cannot succeed (a wrong path, timeoutSeconds
//     5, Halt): the rollout stops with Progressing=False HookTimedOut and
//     deletes nothing; fixed and released, it completes.
func TestScenario18Hooks(t *testing.T) {
	if suite.cfg.Provider != ProviderKind {
		t.Skip("hooks need pods that answer: the kind provider's (the lab's pods are kwok's)")
	}
	s := begin(t, "18 drain, gate and undo through the pod proxy", "hooks")
	fc := s.sample()
	withLifecycle(fc, "/drain", 30)
	s.create(fc)
	s.settle()
	s.checker.Reset()
	a, b, n := suite.memberA, suite.memberB, s.name
	withHooks := []string{
		a + "/" + n + "-pd-0", a + "/" + n + "-pd-1", b + "/" + n + "-pd-2",
		a + "/" + n + "-tikv-0", a + "/" + n + "-tikv-1", b + "/" + n + "-tikv-2",
	}
	for _, key := range withHooks {
		member, name, _ := strings.Cut(key, "/")
		require.Equal(t, [][]string{nil}, s.callLog(member, name), "%s: one start, no hook call yet", key)
	}

	// 1. The first victim is drained, then its deletion is refused; the
	// manager dies there and a new one deletes it without draining again.
	lift := s.denyDeletion(a, n+"-pd-1")
	sick := n + "-tikv-0"
	_, err := s.podGet(a, sick, "health/fail")
	require.NoError(t, err)
	s.setImages("v8.5.1")
	s.waitStage(n+"-pd-1", v1alpha1.StageDeleting)
	mgr := suite.provider.Manager
	require.NoError(t, mgr.Kill(t.Context()))
	t.Logf("SIGKILL fedop-manager with pd-1 drained and its deletion refused")
	require.NoError(t, mgr.Start(t.Context()))
	s.waitStage(n+"-pd-1", v1alpha1.StageDeleting)
	lift()
	// pd rolls; tikv's gate fails on tikv-0 before its first deletion.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(s.get(c).Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(c, cond)
		assert.Equal(c, v1alpha1.ReasonHealthCheckFailed, cond.Reason)
		assert.Contains(c, cond.Message, "pod "+sick+" in "+a)
	}, settleTimeout, poll, "the tikv gate does not stop the rollout")
	r := s.checker.Report()
	for _, key := range r.DeletionOrder() {
		assert.NotContains(t, key, "-tikv-", "a tikv pod was deleted while tikv-0's /health failed")
	}
	assert.Len(t, r.DeletionOrder(), 3, "pd's three pods")
	_, err = s.podGet(a, sick, "health/pass")
	require.NoError(t, err)
	s.settle()
	r = s.checker.Report()
	s.assertOneAtATime(r)
	assert.Equal(t, s.sampleUpgradeOrder(), r.DeletionOrder())
	for _, key := range withHooks {
		member, name, _ := strings.Cut(key, "/")
		assert.Equal(t, [][]string{{"drain"}, nil}, s.callLog(member, name), "%s: the old instance drained once, the new one not yet", key)
	}

	// 2. Called off: the next upgrade's first pod is drained, its deletion
	// refused; the image goes back and the drain is undone.
	lift = s.denyDeletion(a, n+"-pd-1")
	s.checker.Reset()
	s.setImages("v8.5.2")
	s.waitStage(n+"-pd-1", v1alpha1.StageDeleting)
	s.setImages("v8.5.1")
	s.settle()
	lift()
	assert.Empty(t, s.checker.Report().DeletionOrder(), "a pod was deleted")
	assert.Equal(t, [][]string{{"drain"}, {"drain", "undrain"}}, s.callLog(a, n+"-pd-1"), "pd-1: drained, then undone")

	// 3. A preDelete hook that cannot succeed halts the rollout.
	s.update(func(fc *v1alpha1.FederationCluster) {
		withLifecycle(fc, "/no-such-hook", 5)
		for i := range fc.Spec.Components {
			ctr := &fc.Spec.Components[i].Template.Spec.Containers[0]
			ctr.Image = ctr.Image[:strings.LastIndex(ctr.Image, ":")+1] + "v8.5.2"
		}
	})
	var op *v1alpha1.Operation
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := s.get(c)
		cond := meta.FindStatusCondition(fc.Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, v1alpha1.ReasonHookTimedOut, cond.Reason)
		assert.Contains(c, cond.Message, "HTTP 404")
		op = fc.Status.Operation
	}, settleTimeout, poll, "the rollout did not halt")
	assert.Empty(t, s.checker.Report().DeletionOrder(), "a pod was deleted past a failing preDelete hook")
	s.update(func(fc *v1alpha1.FederationCluster) {
		withLifecycle(fc, "/drain", 30)
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[v1alpha1.AnnotationReleaseOperation] = op.StartedTime.UTC().Format(time.RFC3339)
	})
	s.settle()
	r = s.checker.Report()
	s.assertOneAtATime(r)
	assert.Equal(t, s.sampleUpgradeOrder(), r.DeletionOrder())
	s.finish(windowFaults)
}

// TestScenario19Partition: with tikv's partition at 2, an upgrade replaces
// every pd and tidb pod and only tikv-2; tikv-0 and tikv-1 keep the old
// revision and the FederationCluster is Complete. Lowering the partition
// to 0 replaces them.
func TestScenario19Partition(t *testing.T) {
	s := begin(t, "19 partition: a canary", "canary")
	fc := s.sample()
	for i := range fc.Spec.Components {
		if fc.Spec.Components[i].Name == "tikv" {
			fc.Spec.Components[i].UpdateStrategy = &v1alpha1.UpdateStrategy{Partition: ptr.To(int32(2))}
		}
	}
	s.create(fc)
	s.settle()
	s.checker.Reset()
	a, n := suite.memberA, s.name
	before := s.livePods(t)
	s.setImages("v8.5.1")
	held := []string{a + "/" + n + "-tikv-0", a + "/" + n + "-tikv-1"}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := s.get(c)
		require.Equal(c, fc.Generation, fc.Status.ObservedGeneration)
		require.Nil(c, fc.Status.Operation)
		assert.Equal(c, totalReplicas(fc)-2, fc.Status.UpdatedReplicas)
		for _, cs := range fc.Status.Components {
			assert.Equal(c, v1alpha1.RolloutDone, cs.Rollout, "rollout of %s", cs.Name)
		}
		assert.True(c, assertCondition(c, fc, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonComplete))
	}, settleTimeout, poll, "the partitioned upgrade did not complete")
	after := s.livePods(t)
	for key, pod := range after {
		image := pod.Spec.Containers[0].Image
		if key == held[0] || key == held[1] {
			assert.Equal(t, before[key].UID, pod.UID, "%s is below the partition", key)
			assert.True(t, strings.HasSuffix(image, ":v8.5.0"), "%s runs %s", key, image)
			continue
		}
		assert.True(t, strings.HasSuffix(image, ":v8.5.1"), "%s runs %s", key, image)
	}
	want := []string{}
	for _, key := range s.sampleUpgradeOrder() {
		if key != held[0] && key != held[1] {
			want = append(want, key)
		}
	}
	assert.Equal(t, want, s.checker.Report().DeletionOrder(), "only the pods at or above the partition were replaced")

	s.update(func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			if fc.Spec.Components[i].Name == "tikv" {
				fc.Spec.Components[i].UpdateStrategy.Partition = ptr.To(int32(0))
			}
		}
	})
	s.settle()
	r := s.checker.Report()
	s.assertOneAtATime(r)
	assert.Equal(t, append(want, a+"/"+n+"-tikv-1", a+"/"+n+"-tikv-0"), r.DeletionOrder(), "then the held pods, highest ordinal first")
	s.finish(windowRollout)
}
