package federation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// HookTimeout bounds one hook call: no answer within it is a failure.
const HookTimeout = 10 * time.Second

// Backoff of hook calls that fail, per pod and hook: 1s doubling to 30s
// (client-go's flowcontrol.Backoff, with jitter).
const (
	hookBackoffInitial = time.Second
	hookBackoffMax     = 30 * time.Second
)

// The kinds of the calls a preDelete hook makes: its httpGet before a
// deletion, its undo when the deletion is called off. They name the call
// in messages and Events, as the API's field names do.
const (
	hookPreDelete = "preDelete"
	hookUndo      = "undo"
)

// hookFailureEvents is the number of failures in a row of one hook call
// at which Warning Events begin: that failure and each one after it is
// also recorded as an Event.
const hookFailureEvents = 3

// HookCaller makes the HTTP GET of a lifecycle hook on a pod. Call returns
// nil when the pod answered 2xx, else an error that says what it answered
// or why it could not be reached.
type HookCaller interface {
	Call(ctx context.Context, c cluster.Cluster, pod *corev1.Pod, hook v1alpha1.HTTPGetHook) error
}

// PodProxyCaller reaches pods through their member's API server: GET
// /api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy<path>, so fedop needs no
// network path to pod IPs, only the member RBAC pods/proxy get. Each
// member's client is built once, on the member cluster's HTTP client.
type PodProxyCaller struct {
	mu      sync.Mutex
	clients map[cluster.Cluster]corev1client.CoreV1Interface
}

// NewPodProxyCaller returns a PodProxyCaller.
func NewPodProxyCaller() *PodProxyCaller {
	return &PodProxyCaller{clients: map[cluster.Cluster]corev1client.CoreV1Interface{}}
}

func (p *PodProxyCaller) client(c cluster.Cluster) (corev1client.CoreV1Interface, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cs, ok := p.clients[c]; ok {
		return cs, nil
	}
	cs, err := corev1client.NewForConfigAndClient(rest.CopyConfig(c.GetConfig()), c.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	// A member's cluster is replaced when it reconnects; the old one's
	// client goes with it.
	if len(p.clients) > 1024 {
		clear(p.clients)
	}
	p.clients[c] = cs
	return cs, nil
}

// Call implements HookCaller.
func (p *PodProxyCaller) Call(ctx context.Context, c cluster.Cluster, pod *corev1.Pod, hook v1alpha1.HTTPGetHook) error {
	port, err := hookPort(pod, hook.Port)
	if err != nil {
		return err
	}
	cs, err := p.client(c)
	if err != nil {
		return err
	}
	return proxyGet(ctx, cs, pod, port, hook.Path)
}

// proxyGet makes GET path on port of pod through cs's pod proxy.
func proxyGet(ctx context.Context, cs corev1client.CoreV1Interface, pod *corev1.Pod, port int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, HookTimeout)
	defer cancel()
	_, err := cs.Pods(pod.Namespace).ProxyGet("", pod.Name, strconv.Itoa(port), path, nil).DoRaw(ctx)
	return describeHookError(err)
}

// hookPort resolves a hook's port on pod: a number, or the name of one of
// its containers' ports (the pod proxy takes numbers only).
func hookPort(pod *corev1.Pod, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port.StrVal {
				return int(p.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("pod %s has no container port named %q", pod.Name, port.StrVal)
}

// describeHookError turns a pod proxy error into a short reason: the
// status the pod (or the proxy) answered, and the start of its body.
func describeHookError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", HookTimeout)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		msg := strings.TrimSpace(s.Message)
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return fmt.Errorf("HTTP %d: %s", s.Code, msg)
	}
	return err
}

// hookRuns remembers, per FederationCluster, how the hook calls of its
// current step went: failures in a row and the last error, per call, and
// the backoff between attempts. It lives in memory: a restarted manager
// calls again at once, and the hooks' timeouts count from
// status.operation.stageStartedTime, which survives it.
type hookRuns struct {
	backoff *flowcontrol.Backoff
	mu      sync.Mutex
	runs    map[string]*hookRun
	// answered holds, per FederationCluster, the step hook call (a
	// stepHookID) that last answered 2xx, until a reconcile reads a status
	// that records another stage. A reconcile that still reads the stage
	// the call was made in (its status write conflicted, or the cache has
	// not seen the write yet) takes the answer from here instead of
	// calling the hook again.
	answered map[client.ObjectKey]string
}

type hookRun struct {
	failures int
	last     string
	at       time.Time
}

func newHookRuns(backoff *flowcontrol.Backoff) *hookRuns {
	return &hookRuns{backoff: backoff, runs: map[string]*hookRun{}, answered: map[client.ObjectKey]string{}}
}

// due reports whether call id may be made at now, and if not, how long
// until it may.
func (h *hookRuns) due(id string, now time.Time) (bool, time.Duration) {
	h.mu.Lock()
	run := h.runs[id]
	h.mu.Unlock()
	if run == nil || !h.backoff.IsInBackOffSinceUpdate(id, now) {
		return true, 0
	}
	return false, max(run.at.Add(h.backoff.Get(id)).Sub(now), time.Millisecond)
}

// failed records a failure of call id at now and returns the count in a
// row.
func (h *hookRuns) failed(id string, now time.Time, err error) int {
	h.backoff.Next(id, now)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.runs) > 256 {
		// Calls of stages long over (halted, then released) are not
		// forgotten by a success: drop those quiet for a while.
		for old, run := range h.runs {
			if now.Sub(run.at) > 10*hookBackoffMax {
				delete(h.runs, old)
			}
		}
		h.backoff.GC()
	}
	run := h.runs[id]
	if run == nil {
		run = &hookRun{}
		h.runs[id] = run
	}
	run.failures++
	run.last, run.at = err.Error(), now
	return run.failures
}

// last returns call id's failures in a row and its last error.
func (h *hookRuns) last(id string) (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if run := h.runs[id]; run != nil {
		return run.failures, run.last
	}
	return 0, ""
}

// succeeded forgets call id.
func (h *hookRuns) succeeded(id string) {
	h.backoff.Reset(id)
	h.mu.Lock()
	delete(h.runs, id)
	h.mu.Unlock()
}

// stepAnswered records that step hook call id of FederationCluster key
// answered 2xx.
func (h *hookRuns) stepAnswered(key client.ObjectKey, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered[key] = id
}

// hasAnswered reports whether step hook call id, the one the status of key
// as read records ("" for none), answered 2xx in this process. Any other id
// means status has moved past that call, which is then forgotten: a stage
// entered again later calls its hook again.
func (h *hookRuns) hasAnswered(key client.ObjectKey, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if last, ok := h.answered[key]; ok && last == id {
		return true
	}
	delete(h.answered, key)
	return false
}

// forget drops every call of FederationCluster key.
func (h *hookRuns) forget(key client.ObjectKey) {
	prefix := key.String() + "/"
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.answered, key)
	for id := range h.runs {
		if strings.HasPrefix(id, prefix) {
			delete(h.runs, id)
			h.backoff.DeleteEntry(id)
		}
	}
}

// hookID names one hook call: FederationCluster, kind, member, pod
// instance.
func hookID(key client.ObjectKey, kind string, ref rollout.PodRef) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s", key, kind, ref.Member, ref.Name, ref.UID)
}

// stepHookID names the call of the step's hook in the stage op records:
// a stage entered again (after a release, say) starts with no failures
// and no backoff.
func stepHookID(key client.ObjectKey, kind string, ref rollout.PodRef, op *v1alpha1.Operation) string {
	id := hookID(key, kind, ref)
	if op != nil && op.StageStartedTime != nil {
		id += "@" + op.StageStartedTime.UTC().Format(time.RFC3339)
	}
	return id
}

// recordedStage reports whether status.operation, as read, records stage
// for the pod instance ref: only then may its hook be called, so that a
// manager that dies during the call resumes the same stage.
func recordedStage(op *v1alpha1.Operation, stage v1alpha1.StepStage, ref *rollout.PodRef) bool {
	return op != nil && op.Stage == stage && op.Pod == ref.Name && op.Member == ref.Member && op.PodUID == ref.UID
}

// hookOutcome is what the hook calls of one reconcile did, for its Events.
type hookOutcome struct {
	// drained and undone name the pod whose preDelete hook or undo
	// answered 2xx.
	drained, undone *rollout.PodRef
	// failed is the call that failed, with its failures in a row.
	failed   string
	failures int
	failedOn *rollout.PodRef
	// retryAfter is how soon a call in backoff may be made again.
	retryAfter time.Duration
	// callNext is true when the plan entered a stage whose hook is
	// called once status records it: in the next reconcile, at once.
	callNext bool
}

// planWithHooks plans fc's next step, calling the hooks the plan depends
// on: the postReady gates it lists (Plan.Check), and the preDelete hook or
// undo of the step (Plan.Drain, Plan.Undo) when status already records
// that stage, each call in backoff after a failure. The planner is called
// again with the answers, at most a few times.
func (r *Reconciler) planWithHooks(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, state *rollout.State) (rollout.Plan, hookOutcome) {
	key := client.ObjectKeyFromObject(fc)
	var out hookOutcome
	// The step's hook failures so far, so that a plan that does not call
	// it (halted past its timeout, or in backoff) still says why; and a
	// call that answered in an earlier reconcile whose write of the next
	// stage was lost (a conflict) or is not in the cache yet is not made
	// again.
	recorded, kind := "", ""
	if op := fc.Status.Operation; op != nil && op.Pod != "" {
		kind = map[v1alpha1.StepStage]string{v1alpha1.StageDraining: hookPreDelete, v1alpha1.StageUndoing: hookUndo}[op.Stage]
		if kind != "" {
			ref := rollout.PodRef{Member: op.Member, Name: op.Pod, UID: op.PodUID}
			recorded = stepHookID(key, kind, ref, op)
			state.Calls.Failures, state.Calls.Failed = r.hooks.last(recorded)
		}
	}
	if r.hooks.hasAnswered(key, recorded) {
		state.Calls.Drained = kind == hookPreDelete
		state.Calls.Undone = kind == hookUndo
	}
	tried := false
	plan := rollout.Next(*state)
	for range 4 {
		called := false
		var ask []rollout.PodRef
		for _, ref := range plan.Check {
			if _, ok := state.Calls.Health[ref.Member+"/"+ref.Name]; !ok {
				ask = append(ask, ref)
			}
		}
		if len(ask) > 0 {
			if state.Calls.Health == nil {
				state.Calls.Health = map[string]string{}
			}
			r.checkHealth(ctx, key, obs, ask, state.Calls.Health, &out)
			called = true
		}
		for _, call := range []struct {
			ref   *rollout.PodRef
			stage v1alpha1.StepStage
			kind  string
			done  *bool
		}{
			{plan.Drain, v1alpha1.StageDraining, hookPreDelete, &state.Calls.Drained},
			{plan.Undo, v1alpha1.StageUndoing, hookUndo, &state.Calls.Undone},
		} {
			if call.ref == nil || *call.done {
				continue
			}
			if !recordedStage(fc.Status.Operation, call.stage, call.ref) {
				// Called only in a stage status records: in the next
				// reconcile, once this one has written it.
				out.callNext = true
				continue
			}
			id := stepHookID(key, call.kind, *call.ref, fc.Status.Operation)
			if ok, after := r.hooks.due(id, obs.now); !ok {
				// In backoff: its last failure (state.Calls, from before
				// the loop) stands until it is due.
				out.retryAfter = minPositive(out.retryAfter, after)
				continue
			}
			if tried {
				// One step hook call per reconcile: the next at once.
				out.callNext = true
				continue
			}
			tried = true
			err := r.callHook(ctx, obs, *call.ref, call.kind)
			called = true
			if err == nil {
				r.hooks.succeeded(id)
				r.hooks.stepAnswered(key, id)
				*call.done = true
				if call.kind == hookUndo {
					out.undone = call.ref
				} else {
					out.drained = call.ref
				}
				continue
			}
			n := r.hooks.failed(id, obs.now, err)
			state.Calls.Failures, state.Calls.Failed = n, err.Error()
			out.failed, out.failures, out.failedOn = call.kind, n, call.ref
			_, after := r.hooks.due(id, obs.now)
			out.retryAfter = minPositive(out.retryAfter, after)
		}
		if !called {
			break
		}
		plan = rollout.Next(*state)
	}
	return plan, out
}

// callHook calls hook kind (hookPreDelete or hookUndo) of the component of
// ref on ref's pod.
func (r *Reconciler) callHook(ctx context.Context, obs *observation, ref rollout.PodRef, kind string) error {
	cv := obs.component(ref.Component)
	if cv == nil || cv.spec == nil || cv.spec.Lifecycle == nil || cv.spec.Lifecycle.PreDelete == nil {
		return fmt.Errorf("component %s has no preDelete hook", ref.Component)
	}
	hook := cv.spec.Lifecycle.PreDelete.HTTPGet
	if kind == hookUndo {
		if cv.spec.Lifecycle.PreDelete.Undo == nil {
			return fmt.Errorf("component %s's preDelete hook has no undo", ref.Component)
		}
		hook = *cv.spec.Lifecycle.PreDelete.Undo
	}
	mv, pod := obs.pod(ref)
	if pod == nil {
		return fmt.Errorf("pod %s in member %s is not in the cache", ref.Name, ref.Member)
	}
	return r.caller.Call(ctx, mv.cluster, pod, hook)
}

// maxParallelHealth bounds the postReady calls of one reconcile in flight
// at once.
const maxParallelHealth = 8

// checkHealth calls the postReady gate of every pod in refs and records
// each answer in health ("" for 2xx). A pod whose last call failed is not
// called again before its backoff ends: its last answer stands.
func (r *Reconciler) checkHealth(
	ctx context.Context, key client.ObjectKey, obs *observation, refs []rollout.PodRef, health map[string]string, out *hookOutcome,
) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelHealth)
	for _, ref := range refs {
		id := hookID(key, "postReady", ref)
		if ok, after := r.hooks.due(id, obs.now); !ok {
			// The calls started above write the same map.
			_, last := r.hooks.last(id)
			mu.Lock()
			health[ref.Member+"/"+ref.Name] = last
			out.retryAfter = minPositive(out.retryAfter, after)
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := r.callHealth(ctx, obs, ref)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				r.hooks.succeeded(id)
				health[ref.Member+"/"+ref.Name] = ""
				return
			}
			r.hooks.failed(id, obs.now, err)
			health[ref.Member+"/"+ref.Name] = err.Error()
			_, after := r.hooks.due(id, obs.now)
			out.retryAfter = minPositive(out.retryAfter, after)
		})
	}
	wg.Wait()
}

func (r *Reconciler) callHealth(ctx context.Context, obs *observation, ref rollout.PodRef) error {
	cv := obs.component(ref.Component)
	if cv == nil || cv.spec == nil || cv.spec.Lifecycle == nil || cv.spec.Lifecycle.PostReady == nil {
		return fmt.Errorf("component %s has no postReady gate", ref.Component)
	}
	mv, pod := obs.pod(ref)
	if pod == nil {
		return fmt.Errorf("not in the cache")
	}
	return r.caller.Call(ctx, mv.cluster, pod, cv.spec.Lifecycle.PostReady.HTTPGet)
}

// minPositive returns the smaller of a and b, ignoring zeros.
func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// hooksOf returns what the planner needs of component c's lifecycle hooks.
func hooksOf(c *v1alpha1.Component) rollout.Hooks {
	var h rollout.Hooks
	if c == nil || c.Lifecycle == nil {
		return h
	}
	if pd := c.Lifecycle.PreDelete; pd != nil {
		h.PreDelete, h.Undo = true, pd.Undo != nil
		h.PreDeleteTimeout = seconds(pd.TimeoutSeconds, 120)
		h.Proceed = pd.OnTimeout == v1alpha1.HookTimeoutProceed
	}
	if pr := c.Lifecycle.PostReady; pr != nil {
		h.PostReady = true
		h.ComponentScope = pr.Scope != v1alpha1.HookScopePod
		h.PostReadyTimeout = seconds(pr.TimeoutSeconds, 300)
	}
	return h
}

// seconds is n seconds, or def seconds when n is not positive (an object
// the API server did not default, as in tests that build one in memory).
func seconds(n, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

// partitionOf returns component c's updateStrategy.partition, or 0.
func partitionOf(c *v1alpha1.Component) int {
	if c == nil || c.UpdateStrategy == nil || c.UpdateStrategy.Partition == nil {
		return 0
	}
	return int(*c.UpdateStrategy.Partition)
}
