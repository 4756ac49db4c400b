package federation_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/internal/testenv"
	"github.com/fedop-io/fedop/member"
)

// This file is the harness of the integration tests: one shared set of real
// API servers (a host and members k8s-a and k8s-b), a fake kubelet that
// makes pods Ready, an invariant checker that watches the members on its
// own, and an in-process fedop manager wired as cmd/fedop-manager wires it.

const (
	// wait bounds every Eventually: generous, as the race detector and a
	// shared two-core machine slow everything down.
	wait = 60 * time.Second
	tick = 25 * time.Millisecond

	memberA = "k8s-a"
	memberB = "k8s-b"
	fcName  = "demo"

	// kubeletDelay is how long after a pod appears the fake kubelet
	// reports it Ready: long enough that a pod is visibly not Ready for a
	// while, short enough to keep rollouts quick.
	kubeletDelay = 30 * time.Millisecond
	// probePeriod is the member probe period, the freshness bound: a member
	// that has not answered within it blocks every deletion; ten failed
	// probes in a row (half a period apart, 2.5s) mark it disconnected.
	probePeriod = 500 * time.Millisecond
)

var memberNames = []string{memberA, memberB}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// shared is the federation every test uses: starting three API servers
// costs seconds, so they are started once, on first use, and stopped by
// TestMain. Tests isolate themselves by namespace.
var shared struct {
	once    sync.Once
	env     *testenv.Federation
	kubelet *kubelet
	err     error
}

func TestMain(m *testing.M) {
	// Every log line goes to a buffer; a failing test prints the lines
	// logged while it ran (see setupNamespace). funcr rather than testr,
	// which panics when a goroutine logs after its test ended.
	logger := funcr.New(logs.write, funcr.Options{Verbosity: 1, LogTimestamp: true})
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))

	code := m.Run()
	if shared.kubelet != nil {
		shared.kubelet.stop()
	}
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test federation:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// federationEnv returns the shared federation, starting it on first use:
// the API servers, the member registration Secrets (with the proxied
// kubeconfigs, so that a test can cut fedop off a member) and the fake
// kubelet.
func federationEnv(t *testing.T) (*testenv.Federation, *kubelet) {
	t.Helper()
	shared.once.Do(func() {
		shared.env, shared.err = testenv.Start(testenv.Options{
			Members:               memberNames,
			HostCRDDirectoryPaths: []string{"../config/crd/bases"},
			Scheme:                scheme,
		})
		if shared.err != nil {
			return
		}
		if shared.err = registerMembers(shared.env); shared.err != nil {
			return
		}
		shared.kubelet, shared.err = startKubelet(shared.env)
	})
	require.NoError(t, shared.err, "starting the test federation")
	return shared.env, shared.kubelet
}

// registerMembers writes a registration Secret for every member, as
// hack/register-member.sh does, with the kubeconfig that goes through the
// member's proxy.
func registerMembers(env *testenv.Federation) error {
	ctx := context.Background()
	if err := env.Host.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: member.DefaultNamespace}}); err != nil {
		return err
	}
	for _, m := range env.Members {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: member.DefaultNamespace,
				Name:      m.Name,
				Labels:    map[string]string{member.LabelMemberCluster: "true"},
			},
			Data: map[string][]byte{member.KubeconfigKey: m.ProxiedKubeconfig},
		}
		if err := env.Host.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("registering %s: %w", m.Name, err)
		}
	}
	return nil
}

// namespaces numbers the test namespaces, so that a test run again in the
// same process (go test -count=N) gets a fresh one.
var namespaces atomic.Int64

// setupNamespace creates a namespace for the test, named after base, in the
// host and in every member, and arranges for the logs of the test to be
// printed if it fails. It returns the namespace's name.
func setupNamespace(t *testing.T, env *testenv.Federation, base string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", base, namespaces.Add(1))
	mark := logs.mark()
	t.Cleanup(func() {
		if t.Failed() {
			for _, line := range logs.since(mark, 600) {
				t.Log(line)
			}
		}
	})
	for _, c := range append([]*testenv.Cluster{env.Host}, env.Members...) {
		require.NoError(t, c.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}), "namespace %s in %s", ns, c.Name)
	}
	return ns
}

// logBuffer keeps the most recent log lines of the process.
type logBuffer struct {
	// mu guards lines and total.
	mu    sync.Mutex
	lines []string
	// total counts every line ever written; lines holds the last ones.
	total int
}

const maxLogLines = 200000

var logs = &logBuffer{}

func (b *logBuffer) write(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, prefix+" "+args)
	b.total++
	if len(b.lines) > maxLogLines {
		b.lines = slices.Clone(b.lines[len(b.lines)-maxLogLines/2:])
	}
}

func (b *logBuffer) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// since returns at most the last n lines written after mark.
func (b *logBuffer) since(mark, n int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := len(b.lines) - (b.total - mark)
	first = max(first, len(b.lines)-n, 0)
	return slices.Clone(b.lines[first:])
}

// fedop is one in-process fedop manager: its own registry, reconciler and
// caches, so a new one starts with no memory of an earlier one.
type fedop struct {
	identity string
	registry *member.Registry
	cancel   context.CancelFunc
	done     chan error
	once     sync.Once
}

// startFedop starts a manager on the host as cmd/fedop-manager/main.go
// wires it (metrics and probes off, a short member probe period) and
// returns once every member is connected. It is stopped when the test
// ends, if not before.
func startFedop(t *testing.T, env *testenv.Federation, identity string, opts ...func(*federation.Options)) *fedop {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Host.Config, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 ctrl.Log.WithName(identity),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: {
					Namespaces: map[string]cache.Config{member.DefaultNamespace: {}},
					Label:      labels.SelectorFromSet(labels.Set{member.LabelMemberCluster: "true"}),
				},
			},
		},
		// A test may start a second manager in this process: controller
		// names are checked for uniqueness process-wide.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	registry := member.NewRegistry(member.Options{
		Scheme: scheme, CacheSelector: v1alpha1.ManagedBySelector(), ProbePeriod: probePeriod, SyncTimeout: 10 * time.Second,
		Transform: federation.TrimPod, Objects: federation.CachedObjects(), IndexFields: federation.CachedIndexes(),
	})
	require.NoError(t, registry.SetupWithManager(mgr))
	o := federation.Options{
		Client:   mgr.GetClient(),
		Members:  registry,
		Recorder: mgr.GetEventRecorder("fedop-manager"),
		Identity: identity,
	}
	for _, opt := range opts {
		opt(&o)
	}
	rec := federation.NewReconciler(o)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, rec.SetupWithManager(ctx, mgr))
	f := &fedop{identity: identity, registry: registry, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { f.stop(t) })
	for _, name := range memberNames {
		requireMemberConnected(t, registry, name)
	}
	return f
}

// stop stops the manager and waits for mgr.Start to return: after it,
// nothing of this manager runs.
func (f *fedop) stop(t *testing.T) {
	t.Helper()
	f.once.Do(func() {
		f.cancel()
		select {
		case err := <-f.done:
			assert.NoError(t, err, "manager %s", f.identity)
		case <-time.After(wait):
			t.Errorf("manager %s did not stop within %s", f.identity, wait)
		}
	})
}

func requireMemberConnected(t *testing.T, reg *member.Registry, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := reg.State(name)
		assert.True(c, s.Connected, "%s not connected: %s: %s", name, s.Reason, s.Message)
	}, wait, tick)
}

// kubelet stands in for the kubelets envtest does not have: kubeletDelay
// after a pod appears in a member without a Ready condition, it sets
// status.phase Running, a pod IP new to its member (nextIP) and
// Ready=True through the status subresource. It
// talks to each member directly, not through the proxy fedop uses, so a
// severed member still runs its pods. Pods can be held (not made Ready)
// until released, which lets a test freeze a rollout at a chosen step.
type kubelet struct {
	ctx     context.Context
	cancel  context.CancelFunc
	clients map[string]client.Client
	pods    *podwatch.Watch
	// timers counts the scheduled and running status updates.
	timers sync.WaitGroup
	// ips counts the pod IPs handed out.
	ips atomic.Int64

	// mu guards everything below.
	mu        sync.Mutex
	stopped   bool
	scheduled map[types.UID]bool
	// holds are member/namespace/name keys whose pods stay not Ready; held
	// maps them to the UID of a pod that was due while held.
	holds       map[string]bool
	held        map[string]types.UID
	subscribers map[int]func(member string, pod *corev1.Pod)
	nextSub     int
}

func startKubelet(env *testenv.Federation) (*kubelet, error) {
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{
		ctx: ctx, cancel: cancel, clients: map[string]client.Client{},
		scheduled: map[types.UID]bool{}, holds: map[string]bool{}, held: map[string]types.UID{},
		subscribers: map[int]func(string, *corev1.Pod){},
	}
	// Every client is in place before the first informer can call back.
	configs := map[string]*rest.Config{}
	for _, m := range env.Members {
		k.clients[m.Name], configs[m.Name] = m.Client, m.Config
	}
	var err error
	if k.pods, err = podwatch.StartWatch(ctx, podwatch.Options{Members: configs}, k.observe); err != nil {
		k.stop()
		return nil, err
	}
	return k, nil
}

func (k *kubelet) stop() {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.cancel()
	if k.pods != nil {
		k.pods.Stop()
	}
	k.timers.Wait()
}

func (k *kubelet) observe(memberName string, pod *corev1.Pod, gone bool, _ time.Time) {
	if gone {
		return
	}
	if pod.DeletionTimestamp != nil {
		k.finishTermination(memberName, pod)
		return
	}
	if podwatch.Ready(pod) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped || k.scheduled[pod.UID] {
		return
	}
	k.scheduled[pod.UID] = true
	k.timers.Add(1)
	key, uid := client.ObjectKeyFromObject(pod), pod.UID
	time.AfterFunc(kubeletDelay, func() {
		defer k.timers.Done()
		k.markReady(memberName, key, uid)
	})
}

// finishTermination removes a terminating pod, as a kubelet (bound pods) or
// kube-controller-manager's pod GC (unbound ones) would. envtest has
// neither, and an unbound pod is normally removed in the same request that
// marks it terminating; but a client that gives up mid-request (a manager
// stopped while deleting) can leave it marked and never removed.
func (k *kubelet) finishTermination(memberName string, pod *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	uid := pod.UID
	stale := pod.DeepCopy()
	k.timers.Add(1)
	time.AfterFunc(kubeletDelay, func() {
		defer k.timers.Done()
		_ = k.clients[memberName].Delete(k.ctx, stale, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
	})
}

// markReady makes the pod key with uid Ready, unless it is held, gone or
// replaced by another instance.
func (k *kubelet) markReady(memberName string, key types.NamespacedName, uid types.UID) {
	hk := memberName + "/" + key.String()
	k.mu.Lock()
	if k.holds[hk] {
		k.held[hk] = uid
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	c := k.clients[memberName]
	for attempt := 0; attempt < 50 && k.ctx.Err() == nil; attempt++ {
		var pod corev1.Pod
		err := c.Get(k.ctx, key, &pod)
		if apierrors.IsNotFound(err) || (err == nil && (pod.UID != uid || podwatch.Ready(&pod) || pod.DeletionTimestamp != nil)) {
			return
		}
		if err == nil {
			now := metav1.Now()
			pod.Status.Phase = corev1.PodRunning
			if pod.Status.PodIP == "" {
				ip := k.nextIP(memberName)
				pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
			}
			for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.ContainersReady, corev1.PodReady} {
				setPodCondition(&pod, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: now})
			}
			// The checker hears of the Ready before the update is sent:
			// fedop's watch can deliver it, and fedop act on it, before
			// the update's response is back here. A notice a little early
			// hides nothing: fedop cannot see the Ready before it is
			// stored.
			k.notify(memberName, &pod)
			if err = c.Status().Update(k.ctx, &pod); err == nil {
				return
			}
			if apierrors.IsNotFound(err) {
				return
			}
		}
		if !apierrors.IsConflict(err) {
			select {
			case <-k.ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// nextIP returns a pod IP in member's own CIDR that no pod had before:
// member i of memberNames hands out 10.(241+i).0.0/16, as the lab does, so
// that a replacement pod has a new IP and pods of different members never
// share one.
func (k *kubelet) nextIP(memberName string) string {
	n := k.ips.Add(1)
	return fmt.Sprintf("10.%d.%d.%d", 241+slices.Index(memberNames, memberName), n/250, n%250+1)
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// notify tells every subscriber that pod is being made Ready in member
// (the update is about to be sent). The invariant checker uses it so that a
// Ready pod counts from before anyone can have seen it, whatever its own
// watch's lag.
func (k *kubelet) notify(memberName string, pod *corev1.Pod) {
	k.mu.Lock()
	subs := slices.Collect(maps.Values(k.subscribers))
	k.mu.Unlock()
	for _, fn := range subs {
		fn(memberName, pod)
	}
}

func (k *kubelet) subscribe(fn func(memberName string, pod *corev1.Pod)) (unsubscribe func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := k.nextSub
	k.nextSub++
	k.subscribers[id] = fn
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.subscribers, id)
	}
}

// hold keeps pods named ns/name in member memberA from becoming Ready
// until the returned release is called (or the test ends). A pod already
// Ready is not affected.
func (k *kubelet) hold(t *testing.T, ns, name string) (release func()) {
	hk := memberA + "/" + ns + "/" + name
	k.mu.Lock()
	k.holds[hk] = true
	k.mu.Unlock()
	release = func() {
		k.mu.Lock()
		delete(k.holds, hk)
		uid, due := k.held[hk]
		delete(k.held, hk)
		k.mu.Unlock()
		if due {
			k.markReady(memberA, types.NamespacedName{Namespace: ns, Name: name}, uid)
		}
	}
	t.Cleanup(release)
	return release
}

// checker watches the pods of one FederationCluster in every member with
// its own informers (not fedop's caches, not fedop's status) and keeps,
// at every event, unavailable = podwatch.Shortfall(desired, available) by
// member/component, available being the pods Ready and not terminating.
// It records the maximum, the unavailable count just before each deletion,
// and the order of pod lifecycle events. A kubelet notice counts a pod
// Ready as soon as the API server accepted it, whatever the watch's lag;
// so readiness only goes one way (podwatch.Set.KeepReady).
type checker struct {
	watch       *podwatch.Watch
	unsubscribe func()

	// mu guards everything below.
	mu sync.Mutex
	// desired is replicas by member/component.
	desired               map[string]int
	pods                  *podwatch.Set
	unavailable           podwatch.Gauge
	deletions             []string
	deletionTimes         []time.Time
	unavailableAtDeletion []int
	// history is "create|ready|delete member/name", in the order seen.
	history []string
}

// startChecker starts a checker for FederationCluster ns/fcName and stops
// it when the test ends.
func startChecker(t *testing.T, env *testenv.Federation, k *kubelet, ns string) *checker {
	t.Helper()
	c := &checker{desired: map[string]int{}, pods: podwatch.NewSet()}
	c.pods.KeepReady = true
	configs := map[string]*rest.Config{}
	for _, m := range env.Members {
		configs[m.Name] = m.Config
	}
	selector := labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName})
	var err error
	opts := podwatch.Options{Members: configs, Namespace: ns, Selector: func(string) string { return selector.String() }}
	c.watch, err = podwatch.StartWatch(t.Context(), opts, c.observe)
	require.NoError(t, err)
	t.Cleanup(c.watch.Stop)
	c.unsubscribe = k.subscribe(func(memberName string, pod *corev1.Pod) {
		if pod.Namespace == ns && selector.Matches(labels.Set(pod.Labels)) {
			c.observe(memberName, pod, false, time.Now())
		}
	})
	t.Cleanup(c.unsubscribe)
	return c
}

// observe records an event of pod in member (gone: its delete event).
func (c *checker) observe(memberName string, pod *corev1.Pod, gone bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ch := c.pods.Observe(memberName, pod, gone, at)
	key := memberName + "/" + pod.Name
	if ch&podwatch.Created != 0 {
		c.history = append(c.history, "create "+key)
	}
	if ch&podwatch.BecameReady != 0 {
		c.history = append(c.history, "ready "+key)
	}
	if ch&podwatch.Deleted != 0 {
		c.deletions = append(c.deletions, key)
		c.deletionTimes = append(c.deletionTimes, at)
		c.unavailableAtDeletion = append(c.unavailableAtDeletion, c.unavailable.Now)
		c.history = append(c.history, "delete "+key)
	}
	c.evaluate(at)
}

// evaluate recomputes unavailable. c.mu is held.
func (c *checker) evaluate(at time.Time) {
	available := c.pods.Available(func(r *podwatch.Record) string { return r.Member + "/" + r.Labels[v1alpha1.LabelComponent] })
	c.unavailable.Set(podwatch.Shortfall(c.desired, available), at)
}

// setDesired takes the desired replicas from fc's spec.
func (c *checker) setDesired(fc *v1alpha1.FederationCluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.desired = map[string]int{}
	for _, comp := range fc.Spec.Components {
		for _, p := range comp.Topology {
			c.desired[p.Member+"/"+comp.Name] = int(p.Replicas)
		}
	}
	c.evaluate(time.Now())
}

// reset starts a new phase of the test: the maximum restarts from now and
// the recorded events are dropped.
func (c *checker) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unavailable.Reset(time.Now())
	c.deletions, c.deletionTimes, c.unavailableAtDeletion, c.history = nil, nil, nil, nil
}

type checkerReport struct {
	unavailable, maxUnavailable int
	deletions                   []string
	deletionTimes               []time.Time
	unavailableAtDeletion       []int
	history                     []string
}

func (c *checker) report() checkerReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return checkerReport{
		unavailable:           c.unavailable.Now,
		maxUnavailable:        c.unavailable.Max,
		deletions:             slices.Clone(c.deletions),
		deletionTimes:         slices.Clone(c.deletionTimes),
		unavailableAtDeletion: slices.Clone(c.unavailableAtDeletion),
		history:               slices.Clone(c.history),
	}
}

// historyOf returns the entries of h about pods of component, in order.
func historyOf(h []string, component string) []string {
	var out []string
	for _, e := range h {
		if strings.Contains(e, "/"+fcName+"-"+component+"-") {
			out = append(out, e)
		}
	}
	return out
}

// sampleFC is a TiDB-shaped FederationCluster in ns over k8s-a and k8s-b:
//
//	pd:   k8s-a 2 (ordinals 0, 1), k8s-b 1 (2)
//	tikv: k8s-a 2 (0, 1),          k8s-b 2 (2, 3), with an env override in k8s-b
//	tidb: k8s-a 1 (0),             k8s-b 0
//
// Templates try to set labels fedop owns, to check that fedop's win.
func sampleFC(ns string) *v1alpha1.FederationCluster {
	tikvB := placement(memberB, 2, "b")
	tikvB.Env = []corev1.EnvVar{{Name: "TIKV_LABELS", Value: "zone=b"}}
	return &v1alpha1.FederationCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName},
		Spec: v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{
			component("pd", "pingcap/pd:v8.5.0", 2379, placement(memberA, 2, "a"), placement(memberB, 1, "b")),
			component("tikv", "pingcap/tikv:v8.5.0", 20160, placement(memberA, 2, "a"), tikvB),
			component("tidb", "pingcap/tidb:v8.5.0", 4000, placement(memberA, 1, "a"), placement(memberB, 0, "b")),
		}},
	}
}

func component(name, image string, port int32, topology ...v1alpha1.Placement) v1alpha1.Component {
	return v1alpha1.Component{
		Name: name,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				"app": fcName + "-" + name,
				// fedop's own label must win over the template's.
				v1alpha1.LabelComponent: "not-" + name,
			}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "unset"},
				Containers: []corev1.Container{{
					Name:  name,
					Image: image,
					Ports: []corev1.ContainerPort{{Name: "main", ContainerPort: port}, {ContainerPort: port + 1}},
					Env:   []corev1.EnvVar{{Name: "COMPONENT", Value: name}},
				}},
			},
		},
		Topology: topology,
	}
}

func placement(memberName string, replicas int32, zone string) v1alpha1.Placement {
	return v1alpha1.Placement{
		Member:       memberName,
		Replicas:     replicas,
		NodeSelector: map[string]string{"topology.kubernetes.io/zone": zone},
		Labels: map[string]string{
			"example.com/zone": zone,
			// fedop's own label must win over the placement's.
			v1alpha1.LabelInstance: "not-" + fcName,
		},
	}
}

func total(fc *v1alpha1.FederationCluster) int32 {
	var n int32
	for _, c := range fc.Spec.Components {
		for _, p := range c.Topology {
			n += p.Replicas
		}
	}
	return n
}

// createFC creates fc and, when the test ends, deletes it and drops its
// finalizer, so that no later test's manager inherits it.
func createFC(t *testing.T, env *testenv.Federation, fc *v1alpha1.FederationCluster) {
	t.Helper()
	host := env.Host.Client
	require.NoError(t, host.Create(context.Background(), fc))
	key := client.ObjectKeyFromObject(fc)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = host.Delete(ctx, &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur v1alpha1.FederationCluster
			if err := host.Get(ctx, key, &cur); err != nil {
				return err
			}
			cur.Finalizers = nil
			return host.Update(ctx, &cur)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing FederationCluster %s: %v", key, err)
		}
	})
}

// updateFC changes the spec of FederationCluster key with edit, retrying
// on conflicts (fedop writes status concurrently).
func updateFC(t *testing.T, env *testenv.Federation, key client.ObjectKey, edit func(*v1alpha1.FederationCluster)) *v1alpha1.FederationCluster {
	t.Helper()
	var fc v1alpha1.FederationCluster
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Host.Client.Get(context.Background(), key, &fc); err != nil {
			return err
		}
		edit(&fc)
		return env.Host.Client.Update(context.Background(), &fc)
	}))
	return &fc
}

func getFC(t require.TestingT, env *testenv.Federation, key client.ObjectKey) *v1alpha1.FederationCluster {
	var fc v1alpha1.FederationCluster
	require.NoError(t, env.Host.Client.Get(context.Background(), key, &fc))
	return &fc
}

// requireSettled waits until fc's status describes the current spec fully
// rolled out: observedGeneration current, no operation, every desired pod
// Ready and updated, every component's rollout Done, Ready=True and
// MembersConnected=True. It returns the FederationCluster as last read.
func requireSettled(t *testing.T, env *testenv.Federation, key client.ObjectKey) *v1alpha1.FederationCluster {
	t.Helper()
	var fc *v1alpha1.FederationCluster
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc = getFC(c, env, key)
		st := fc.Status
		want := total(fc)
		require.Equal(c, fc.Generation, st.ObservedGeneration, "observedGeneration")
		require.Nil(c, st.Operation, "operation")
		assert.Equal(c, want, st.Replicas, "replicas")
		assert.Equal(c, want, st.ReadyReplicas, "readyReplicas")
		assert.Equal(c, want, st.UpdatedReplicas, "updatedReplicas")
		require.Len(c, st.Components, len(fc.Spec.Components))
		for i, cs := range st.Components {
			assert.Equal(c, fc.Spec.Components[i].Name, cs.Name, "components in spec order")
			assert.Equal(c, v1alpha1.RolloutDone, cs.Rollout, "rollout of %s", cs.Name)
		}
		assertCondition(c, fc, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
		assertCondition(c, fc, v1alpha1.ConditionMembersConnected, metav1.ConditionTrue, v1alpha1.ReasonConnected)
		assertCondition(c, fc, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonComplete)
	}, wait, tick, "FederationCluster %s did not settle", key)
	return fc
}

func assertCondition(t assert.TestingT, fc *v1alpha1.FederationCluster, typ string, status metav1.ConditionStatus, reason string) {
	c := meta.FindStatusCondition(fc.Status.Conditions, typ)
	if !assert.NotNil(t, c, "condition %s", typ) {
		return
	}
	if assert.Equal(t, status, c.Status, "condition %s: %s", typ, c.Message) {
		assert.Equal(t, reason, c.Reason, "reason of %s: %s", typ, c.Message)
	}
}

// memberPods returns fedop's pods of fc in every member, read from the API
// servers directly, by member/name.
func memberPods(t require.TestingT, env *testenv.Federation, ns string) map[string]corev1.Pod {
	out := map[string]corev1.Pod{}
	for _, m := range env.Members {
		var list corev1.PodList
		require.NoError(t, m.Client.List(context.Background(), &list, client.InNamespace(ns),
			client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName}))
		for _, p := range list.Items {
			out[m.Name+"/"+p.Name] = p
		}
	}
	return out
}

// decoys are objects in every member that look like fedop's by name but
// carry no app.kubernetes.io/managed-by=fedop label: fedop must never touch
// them.
type decoys struct {
	env     *testenv.Federation
	objects map[string]client.Object // member/kind/name -> as created
}

func createDecoys(t *testing.T, env *testenv.Federation, ns string) *decoys {
	t.Helper()
	d := &decoys{env: env, objects: map[string]client.Object{}}
	for _, m := range env.Members {
		objs := []client.Object{
			// Named like an ordinal of pd, with fedop's instance and
			// component labels, but not managed by fedop.
			&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName + "-pd-99", Labels: map[string]string{
					"app": fcName + "-pd", v1alpha1.LabelInstance: fcName, v1alpha1.LabelComponent: "pd",
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pd", Image: "pingcap/pd:v8.5.0"}}},
			},
			&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName + "-pd-0-decoy"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pd", Image: "pingcap/pd:v8.5.0"}}},
			},
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName + "-decoy", Labels: map[string]string{v1alpha1.LabelInstance: fcName}},
				Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": fcName + "-pd"}},
			},
		}
		for _, o := range objs {
			require.NoError(t, m.Client.Create(context.Background(), o))
			kind := "pod"
			if _, ok := o.(*corev1.Service); ok {
				kind = "service"
			}
			d.objects[m.Name+"/"+kind+"/"+o.GetName()] = o
		}
	}
	return d
}

// assertUntouched checks that every decoy is still there, the same
// instance, not being deleted, with its labels, and that fedop's field
// manager never wrote to it.
func (d *decoys) assertUntouched(t *testing.T) {
	t.Helper()
	for key, want := range d.objects {
		memberName := strings.SplitN(key, "/", 2)[0]
		got := want.DeepCopyObject().(client.Object)
		if !assert.NoError(t, d.env.Member(memberName).Client.Get(context.Background(), client.ObjectKeyFromObject(want), got), "decoy %s", key) {
			continue
		}
		assert.Equal(t, want.GetUID(), got.GetUID(), "decoy %s was replaced", key)
		assert.Nil(t, got.GetDeletionTimestamp(), "decoy %s is being deleted", key)
		assert.Equal(t, want.GetLabels(), got.GetLabels(), "labels of decoy %s", key)
		for _, mf := range got.GetManagedFields() {
			assert.NotEqual(t, v1alpha1.FieldManager, mf.Manager, "fedop wrote to decoy %s", key)
		}
	}
}
