package federation_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
)

// Integration tests of the Hooks issue, with fake pod endpoints: a
// HookCaller that answers each path and pod as the test says and records
// every call. The real caller, through the member API server's pod proxy,
// is exercised on kind (e2e scenario 18).

// hookCall is one call the fake endpoints answered.
type hookCall struct {
	member, pod, path string
	uid               types.UID
	at                time.Time
	code              int
}

func (c hookCall) ok() bool { return c.code/100 == 2 }

// fakeHooks are the pods' hook endpoints: 200 unless the test says
// otherwise, per path and pod name ("" for every pod).
type fakeHooks struct {
	mu    sync.Mutex
	calls []hookCall
	codes map[string]map[string]int
}

func newFakeHooks() *fakeHooks { return &fakeHooks{codes: map[string]map[string]int{}} }

// Call implements federation.HookCaller.
func (f *fakeHooks) Call(_ context.Context, _ cluster.Cluster, pod *corev1.Pod, hook v1alpha1.HTTPGetHook) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := 200
	if byPod, ok := f.codes[hook.Path]; ok {
		if c, ok := byPod[pod.Name]; ok {
			code = c
		} else if c, ok := byPod[""]; ok {
			code = c
		}
	}
	f.calls = append(f.calls, hookCall{member: pod.Labels[v1alpha1.LabelMember], pod: pod.Name, uid: pod.UID, path: hook.Path, at: time.Now(), code: code})
	if code/100 != 2 {
		return fmt.Errorf("HTTP %d", code)
	}
	return nil
}

// answer makes path answer code on pod ("" for every pod).
func (f *fakeHooks) answer(path, pod string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.codes[path] == nil {
		f.codes[path] = map[string]int{}
	}
	f.codes[path][pod] = code
}

// log returns the calls of path, in order.
func (f *fakeHooks) log(path string) []hookCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hookCall
	for _, c := range f.calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

func withHooks(h federation.HookCaller) func(*federation.Options) {
	return func(o *federation.Options) { o.Hooks = h }
}

// hookFC is one component "db" (k8s-a 2, k8s-b 1) with lifecycle lc.
func hookFC(lc *v1alpha1.Lifecycle) func(ns string) *v1alpha1.FederationCluster {
	return func(ns string) *v1alpha1.FederationCluster {
		c := component("db", "example.com/db:1", 8080, placement(memberA, 2, "a"), placement(memberB, 1, "b"))
		c.Lifecycle = lc
		return &v1alpha1.FederationCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName},
			Spec:       v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{c}},
		}
	}
}

// drainAndGate: /drain (port named main) with /undrain, 60s, Halt; and a
// /health gate of scope Component, 60s.
func drainAndGate() *v1alpha1.Lifecycle {
	return &v1alpha1.Lifecycle{
		PreDelete: &v1alpha1.PreDeleteHook{
			HTTPGet:        v1alpha1.HTTPGetHook{Path: "/drain", Port: intstr.FromString("main")},
			Undo:           &v1alpha1.HTTPGetHook{Path: "/undrain", Port: intstr.FromInt32(8080)},
			TimeoutSeconds: 60,
		},
		PostReady: &v1alpha1.PostReadyHook{
			HTTPGet: v1alpha1.HTTPGetHook{Path: "/health", Port: intstr.FromInt32(8080)}, Scope: v1alpha1.HookScopeComponent, TimeoutSeconds: 60,
		},
	}
}

// startHookScenario is startScenario with the fake endpoints h.
func startHookScenario(t *testing.T, base string, h *fakeHooks, fc func(ns string) *v1alpha1.FederationCluster, opts ...func(*federation.Options)) *scenario {
	t.Helper()
	env, k := federationEnv(t)
	ns := setupNamespace(t, env, base)
	s := &scenario{env: env, kubelet: k, ns: ns, key: client.ObjectKey{Namespace: ns, Name: fcName}}
	s.decoys = createDecoys(t, env, ns)
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, env, s.key)
		}
	})
	s.checker = startChecker(t, env, k, ns)
	s.fedop = startFedop(t, env, ns+"-1", append([]func(*federation.Options){withHooks(h)}, opts...)...)
	obj := fc(ns)
	s.checker.setDesired(obj)
	createFC(t, env, obj)
	requireSettled(t, env, s.key)
	return s
}

// operation returns status.operation, or nil.
func operation(t require.TestingT, s *scenario) *v1alpha1.Operation {
	return getFC(t, s.env, s.key).Status.Operation
}

// hookVictim is the pod the hook scenarios step on.
const hookVictim = fcName + "-db-1"

// waitStage waits until status.operation is at stage on pod hookVictim.
func waitStage(t *testing.T, s *scenario, stage v1alpha1.StepStage) *v1alpha1.Operation {
	t.Helper()
	pod := hookVictim
	var op *v1alpha1.Operation
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		op = operation(c, s)
		require.NotNil(c, op, "no operation")
		assert.Equal(c, pod, op.Pod, "pod")
		assert.Equal(c, stage, op.Stage, "stage")
	}, wait, tick, "stage %s of %s", stage, pod)
	return op
}

// denyDeletion makes member's API server refuse to delete pod name in ns,
// through a ValidatingAdmissionPolicy, until the returned func is called
// (or the test ends).
func denyDeletion(t *testing.T, s *scenario, memberName, name string) func() {
	t.Helper()
	m := s.env.Member(memberName).Client
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-" + s.ns + "-" + name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{name},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "the test keeps this pod"}},
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
	require.NoError(t, m.Create(context.Background(), policy))
	require.NoError(t, m.Create(context.Background(), binding))
	// Enforced once the API server's informer has it: a dry-run delete
	// is refused then.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
		err := m.Delete(context.Background(), pod, client.DryRunAll)
		assert.True(c, err != nil && !apierrors.IsNotFound(err), "the policy is not enforced yet (%v)", err)
	}, wait, tick)
	var once sync.Once
	lift := func() {
		once.Do(func() {
			_ = m.Delete(context.Background(), binding)
			_ = m.Delete(context.Background(), policy)
		})
	}
	t.Cleanup(lift)
	return lift
}

// uids returns the UIDs of pods, by member/name.
func uids(pods map[string]corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for k, p := range pods {
		out[k] = p.UID
	}
	return out
}

// TestDrainBeforeEachDeletion: in an upgrade, every pod is drained
// (preDelete answered 2xx) exactly once, before it is deleted; the gate is
// asked of the other pods before the first deletion and of every pod after
// each replacement; nothing is undone.
func TestDrainBeforeEachDeletion(t *testing.T) {
	h := newFakeHooks()
	s := startHookScenario(t, "drain", h, hookFC(drainAndGate()))
	old := uids(memberPods(t, s.env, s.ns))
	s.checker.reset()
	start := time.Now()
	updateFC(t, s.env, s.key, setImages("2"))
	requireSettled(t, s.env, s.key)

	r := s.checker.report()
	require.Len(t, r.deletions, 3)
	assert.LessOrEqual(t, r.maxUnavailable, 1)
	deleted := map[string]time.Time{}
	for i, key := range r.deletions {
		deleted[key] = r.deletionTimes[i]
	}
	drains := map[types.UID][]hookCall{}
	for _, c := range h.log("/drain") {
		drains[c.uid] = append(drains[c.uid], c)
	}
	for key, uid := range old {
		calls := drains[uid]
		if assert.Len(t, calls, 1, "drain calls of %s (%s)", key, uid) {
			assert.True(t, calls[0].ok())
			assert.True(t, calls[0].at.Before(deleted[key]), "%s deleted at %s, drained at %s", key, deleted[key], calls[0].at)
		}
		delete(drains, uid)
	}
	assert.Empty(t, drains, "drains of pods that were not deleted")
	assert.Empty(t, h.log("/undrain"), "nothing was called off")

	// The gate: before the first deletion, the two other pods; after the
	// last replacement, every pod.
	first := slices.MinFunc(r.deletionTimes, time.Time.Compare)
	var before []string
	for _, c := range h.log("/health") {
		if c.at.After(start) && c.at.Before(first) {
			before = append(before, c.member+"/"+c.pod)
		}
	}
	gated := slices.Compact(slices.Sorted(slices.Values(before)))
	assert.ElementsMatch(t, []string{memberA + "/" + fcName + "-db-0", memberB + "/" + fcName + "-db-2"}, gated, "gate before the first deletion")
	last := slices.MaxFunc(r.deletionTimes, time.Time.Compare)
	asked := map[string]bool{}
	for _, c := range h.log("/health") {
		if c.at.After(last) && c.ok() {
			asked[c.member+"/"+c.pod] = true
		}
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(old)), slices.Collect(maps.Keys(asked)), "gate after the last replacement")
	events := hostEvents(t, s)
	assert.Len(t, events[federation.EventPodDraining], 3)
	assert.Len(t, events[federation.EventPodDrained], 3)
}

// assertDrainedOnce checks that the drain answered 2xx n times, once per
// pod instance (name and UID).
func assertDrainedOnce(t *testing.T, h *fakeHooks, n int) {
	t.Helper()
	var answered []string
	for _, c := range h.log("/drain") {
		if c.ok() {
			answered = append(answered, c.pod+"@"+string(c.uid))
		}
	}
	assert.Len(t, answered, n, "one answered drain per deleted pod: %v", answered)
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(answered))), n, "no pod drained twice: %v", answered)
}

// conflictingStatus is a client whose first status write recording stage
// Deleting for each pod instance fails with a conflict, as it does when
// someone else wrote the FederationCluster first.
type conflictingStatus struct {
	client.Client
	mu      sync.Mutex
	refused map[types.UID]bool
}

func (c *conflictingStatus) Status() client.SubResourceWriter {
	return &conflictingStatusWriter{SubResourceWriter: c.Client.Status(), c: c}
}

// conflicts returns how many writes were refused.
func (c *conflictingStatus) conflicts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refused)
}

type conflictingStatusWriter struct {
	client.SubResourceWriter
	c *conflictingStatus
}

func (w *conflictingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if fc, ok := obj.(*v1alpha1.FederationCluster); ok {
		if op := fc.Status.Operation; op != nil && op.Stage == v1alpha1.StageDeleting && op.PodUID != "" {
			w.c.mu.Lock()
			first := !w.c.refused[op.PodUID]
			w.c.refused[op.PodUID] = true
			w.c.mu.Unlock()
			if first {
				return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("federationclusters").GroupResource(), fc.Name, fmt.Errorf("the test wrote first"))
			}
		}
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

// TestDrainNotCalledAgainAfterConflict: the write that records a drained
// pod's next stage fails with a conflict; the next reconcile, which still
// reads stage Draining, does not call the drain that answered again.
func TestDrainNotCalledAgainAfterConflict(t *testing.T) {
	h := newFakeHooks()
	var cs *conflictingStatus
	s := startHookScenario(t, "conflict", h, hookFC(drainAndGate()), func(o *federation.Options) {
		cs = &conflictingStatus{Client: o.Client, refused: map[types.UID]bool{}}
		o.Client = cs
	})
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	requireSettled(t, s.env, s.key)
	requireDeletions(t, s.checker, 3)

	assert.Equal(t, 3, cs.conflicts(), "one refused write per step")
	assertDrainedOnce(t, h, 3)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
	assert.LessOrEqual(t, s.checker.report().maxUnavailable, 1)
}

// TestDrainRetriedWithBackoff: a failing preDelete hook is called again
// with growing pauses (1s, 2s, 4s: client-go's backoff), says so in
// Progressing, becomes an Event after three failures, and the step goes
// on once it answers.
func TestDrainRetriedWithBackoff(t *testing.T) {
	h := newFakeHooks()
	s := startHookScenario(t, "backoff", h, hookFC(drainAndGate()))
	h.answer("/drain", "", 503)
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	require.Eventually(t, func() bool { return len(h.log("/drain")) >= 4 }, wait, tick)
	calls := h.log("/drain")
	for i := 1; i < 4; i++ {
		gap := calls[i].at.Sub(calls[i-1].at)
		want := time.Second << (i - 1)
		assert.GreaterOrEqual(t, gap, want-100*time.Millisecond, "pause before attempt %d", i+1)
	}
	cond := progressing(t, s)
	assert.Equal(t, v1alpha1.ReasonHookFailing, cond.Reason)
	assert.Contains(t, cond.Message, "HTTP 503")
	assert.Empty(t, s.checker.report().deletions, "a pod was deleted before its drain answered")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, hostEvents(c, s)[federation.EventHookFailed])
	}, wait, tick)

	h.answer("/drain", "", 200)
	requireSettled(t, s.env, s.key)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
}

// TestDrainTimeoutHalts: a preDelete hook that never answers 2xx within
// timeoutSeconds (onTimeout Halt) stops the rollout with
// Progressing=False HookTimedOut and no further call; a release undoes the
// drain and starts the step again; once the hook answers, the rollout
// completes.
func TestDrainTimeoutHalts(t *testing.T) {
	h := newFakeHooks()
	lc := drainAndGate()
	lc.PreDelete.TimeoutSeconds = 2
	s := startHookScenario(t, "halt", h, hookFC(lc))
	h.answer("/drain", "", 500)
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	var op *v1alpha1.Operation
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := progressing(c, s)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, v1alpha1.ReasonHookTimedOut, cond.Reason)
		assert.Contains(c, cond.Message, "halted: the preDelete hook of pod "+fcName+"-db-1")
		op = operation(c, s)
	}, wait, tick)
	require.NotNil(t, op)
	assert.Equal(t, v1alpha1.StageDraining, op.Stage)
	// Halted: the hook is not called any more (its backoff is at most 2s
	// by now: a call would come within 3s).
	n := len(h.log("/drain"))
	assert.Never(t, func() bool { return len(h.log("/drain")) > n }, 3*time.Second, 100*time.Millisecond, "the hook was called after the halt")
	assert.Empty(t, s.checker.report().deletions)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, hostEvents(c, s)[federation.EventHookTimedOut])
	}, wait, tick)

	// Fixed, then released: the drain is undone, the step starts again.
	h.answer("/drain", "", 200)
	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) {
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[v1alpha1.AnnotationReleaseOperation] = op.StartedTime.UTC().Format(time.RFC3339)
	})
	requireSettled(t, s.env, s.key)
	undos := h.log("/undrain")
	require.Len(t, undos, 1, "the released drain was undone once")
	assert.Equal(t, fcName+"-db-1", undos[0].pod)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
}

// TestDrainTimeoutProceeds: with onTimeout Proceed, a pod whose preDelete
// hook does not answer in time is deleted anyway, with a Warning Event.
func TestDrainTimeoutProceeds(t *testing.T) {
	h := newFakeHooks()
	lc := drainAndGate()
	lc.PreDelete.TimeoutSeconds = 1
	lc.PreDelete.OnTimeout = v1alpha1.HookTimeoutProceed
	s := startHookScenario(t, "proceed", h, hookFC(lc))
	h.answer("/drain", fcName+"-db-1", 500)
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	requireSettled(t, s.env, s.key)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
	notes := hostEvents(t, s)[federation.EventHookTimedOut]
	if assert.Len(t, notes, 1) {
		assert.Contains(t, notes[0], fcName+"-db-1")
		assert.Contains(t, notes[0], "deleting it anyway")
	}
}

// TestCalledOffStepIsUndone: a drained pod whose deletion the member
// refuses waits, drained; reverting the spec calls the step off and its
// undo is called (retried until it answers, across a manager restart)
// before anything else; pausing during the next drain does the same. No
// pod is ever deleted.
func TestCalledOffStepIsUndone(t *testing.T) {
	h := newFakeHooks()
	s := startHookScenario(t, "calloff", h, hookFC(drainAndGate()))
	victim := hookVictim
	denyDeletion(t, s, memberA, victim)
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	waitStage(t, s, v1alpha1.StageDeleting)
	require.Len(t, h.log("/drain"), 1)

	// Reverted: the drain is undone; the undo fails at first, and a new
	// manager goes on calling it.
	h.answer("/undrain", "", 503)
	updateFC(t, s.env, s.key, setImages("1"))
	waitStage(t, s, v1alpha1.StageUndoing)
	require.Eventually(t, func() bool { return len(h.log("/undrain")) >= 2 }, wait, tick)
	s.fedop.stop(t)
	s.fedop = startFedop(t, s.env, s.ns+"-2", withHooks(h))
	n := len(h.log("/undrain"))
	require.Eventually(t, func() bool { return len(h.log("/undrain")) > n }, wait, tick, "the new manager did not call the undo")
	h.answer("/undrain", "", 200)
	requireSettled(t, s.env, s.key)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, hostEvents(c, s)[federation.EventStepUndone], 1)
	}, wait, tick)

	// Paused while draining: undone too.
	h.answer("/drain", "", 503)
	updateFC(t, s.env, s.key, setImages("3"))
	waitStage(t, s, v1alpha1.StageDraining)
	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) { fc.Spec.Paused = true })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, hostEvents(c, s)[federation.EventStepUndone], 2)
		op := operation(c, s)
		if op != nil {
			assert.Empty(c, op.Pod, "the step is dropped")
		}
	}, wait, tick)
	for _, c := range h.log("/undrain") {
		assert.Equal(t, victim, c.pod)
	}
	assert.Empty(t, s.checker.report().deletions, "a pod was deleted")
}

// TestRestartAtEachStage: a manager stopped in stage Draining, Deleting or
// Verifying is followed by one that resumes the same stage of the same
// pod: the stage and its start survive, a drain that answered is not
// called again, and the step completes.
func TestRestartAtEachStage(t *testing.T) {
	h := newFakeHooks()
	s := startHookScenario(t, "restart", h, hookFC(drainAndGate()))
	victim := hookVictim
	restart := func(n int) {
		s.fedop.stop(t)
		s.fedop = startFedop(t, s.env, fmt.Sprintf("%s-%d", s.ns, n), withHooks(h))
	}
	h.answer("/drain", "", 503)
	h.answer("/health", victim, 500) // the replacement's gate fails at first
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))

	// Draining: the new manager calls again, in the same stage.
	op := waitStage(t, s, v1alpha1.StageDraining)
	require.Eventually(t, func() bool { return len(h.log("/drain")) >= 1 }, wait, tick)
	restart(2)
	n := len(h.log("/drain"))
	require.Eventually(t, func() bool { return len(h.log("/drain")) > n }, wait, tick)
	again := waitStage(t, s, v1alpha1.StageDraining)
	assert.Equal(t, op.StageStartedTime, again.StageStartedTime, "the stage's start survives the restart")

	// Deleting: the drain answers, the member refuses the deletion; the
	// next manager deletes without draining again.
	lift := denyDeletion(t, s, memberA, victim)
	h.answer("/drain", "", 200)
	waitStage(t, s, v1alpha1.StageDeleting)
	restart(3)
	waitStage(t, s, v1alpha1.StageDeleting)
	lift()

	// Verifying: the replacement is up, its gate fails; the next manager
	// verifies the same step.
	waitStage(t, s, v1alpha1.StageVerifying)
	restart(4)
	waitStage(t, s, v1alpha1.StageVerifying)
	// The new manager asks the gate and hears it fail; until then, and
	// after, the checker has seen the one deletion only.
	gated := len(h.log("/health"))
	require.Eventually(t, func() bool {
		for _, c := range h.log("/health")[gated:] {
			if c.pod == victim && !c.ok() {
				return true
			}
		}
		return false
	}, wait, tick, "the new manager did not ask the gate")
	r := requireDeletions(t, s.checker, 1)
	assert.Len(t, r.deletions, 1, "the next step waits for the gate")
	h.answer("/health", victim, 200)
	requireSettled(t, s.env, s.key)

	assertDrainedOnce(t, h, 3)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
}

// TestHealthGateBeforeFirstStep: while the postReady gate fails on a pod
// of the component, an upgrade deletes nothing and says why; it starts
// once the gate passes.
func TestHealthGateBeforeFirstStep(t *testing.T) {
	h := newFakeHooks()
	s := startHookScenario(t, "gate", h, hookFC(drainAndGate()))
	sick := fcName + "-db-0"
	h.answer("/health", sick, 500)
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := progressing(c, s)
		assert.Equal(c, v1alpha1.ReasonHealthCheckFailed, cond.Reason)
		assert.Contains(c, cond.Message, "pod "+sick+" in "+memberA+": HTTP 500")
		assert.NotEmpty(c, hostEvents(c, s)[federation.EventHealthCheckFailed])
	}, wait, tick)
	assert.Empty(t, h.log("/drain"), "a pod was drained while the gate failed")
	assert.Empty(t, s.checker.report().deletions)

	h.answer("/health", sick, 200)
	requireSettled(t, s.env, s.key)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
}

// TestPartition: with partition 2, an upgrade replaces only ordinals 2 and
// up, and the FederationCluster is Complete with the rest at the old
// revision; lowering the partition to 0 replaces them.
func TestPartition(t *testing.T) {
	h := newFakeHooks()
	s := startHookScenario(t, "partition", h, func(ns string) *v1alpha1.FederationCluster {
		fc := hookFC(nil)(ns)
		fc.Spec.Components[0].UpdateStrategy = &v1alpha1.UpdateStrategy{Partition: ptr.To(int32(2))}
		return fc
	})
	before := uids(memberPods(t, s.env, s.ns))
	s.checker.reset()
	updateFC(t, s.env, s.key, setImages("2"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := getFC(c, s.env, s.key)
		require.Equal(c, fc.Generation, fc.Status.ObservedGeneration)
		assert.Nil(c, fc.Status.Operation)
		assert.Equal(c, int32(1), fc.Status.UpdatedReplicas)
		require.Len(c, fc.Status.Components, 1)
		assert.Equal(c, v1alpha1.RolloutDone, fc.Status.Components[0].Rollout)
		assertCondition(c, fc, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonComplete)
	}, wait, tick)
	after := uids(memberPods(t, s.env, s.ns))
	for key, uid := range before {
		if key == memberB+"/"+fcName+"-db-2" {
			assert.NotEqual(t, uid, after[key], "%s is at or above the partition", key)
		} else {
			assert.Equal(t, uid, after[key], "%s is below the partition", key)
		}
	}

	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[0].UpdateStrategy.Partition = ptr.To(int32(0))
	})
	requireSettled(t, s.env, s.key)
	assert.Len(t, requireDeletions(t, s.checker, 3).deletions, 3)
	assert.LessOrEqual(t, s.checker.report().maxUnavailable, 1)
}
