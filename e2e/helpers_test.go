//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/member"
)

const (
	// settleTimeout bounds a whole operation (an initialization, an
	// upgrade of eight pods); waitTimeout a single expected change. Both
	// are generous: the lab shares two cores with its six control planes.
	settleTimeout = 3 * time.Minute
	waitTimeout   = time.Minute
	poll          = 100 * time.Millisecond

	// minReadySeconds is every scenario's spec.minReadySeconds. kwok pods
	// are Ready the moment they are bound, so without it a step would be
	// too short to observe. It is 2, not 1: fedop counts it from the Ready
	// condition's lastTransitionTime, which has a resolution of one second,
	// so minReadySeconds N waits between N-1 and N seconds after Ready. 2
	// guarantees the checker's watch of one member at least a second to
	// deliver a Ready event before fedop, acting in another member, deletes
	// the next pod (the watches are independent streams, and a late Ready
	// event would show as a second unavailable pod that never was).
	minReadySeconds = 2

	sampleFile = "config/samples/fedop_v1alpha1_federationcluster.yaml"
)

// scenario is one FederationCluster of a test, in a namespace of its own,
// with its checker.
type scenario struct {
	t     *testing.T
	title string
	name  string
	ns    string
	key   client.ObjectKey
	// clusters maps the member names the FederationCluster's topology
	// uses to the suite's clusters (Config.Members) they reach: usually
	// themselves, but scenario 8 registers a cluster under a second name.
	clusters map[string]string
	checker  *Checker
	// managerID is the manager's identifier when the scenario began.
	managerID string
}

// begin starts a scenario with the FederationCluster fcName in its own
// namespace. When the test ends, the manager must still be running (it is
// started again if not, for the next scenario) and every decoy must be
// untouched.
func begin(t *testing.T, title, fcName string) *scenario {
	t.Helper()
	s := &scenario{
		t: t, title: title, name: fcName, ns: namespaceOf(fcName),
		clusters: map[string]string{suite.memberA: suite.memberA, suite.memberB: suite.memberB},
	}
	s.key = client.ObjectKey{Namespace: s.ns, Name: fcName}
	id, running, err := suite.provider.Manager.Running(t.Context())
	require.NoError(t, err)
	if !running {
		require.NoError(t, suite.provider.Manager.Start(t.Context()), "starting fedop-manager")
		id, _, err = suite.provider.Manager.Running(t.Context())
		require.NoError(t, err)
	}
	s.managerID = id
	t.Cleanup(func() {
		s.checkManagerRunning()
		checkDecoys(t)
	})
	t.Logf("%s: FederationCluster %s, fedop-manager %s", title, s.key, id)
	return s
}

// cleanupContext is the context of cleanup functions: t.Context() is
// cancelled before they run.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func (s *scenario) checkManagerRunning() {
	ctx, cancel := cleanupContext()
	defer cancel()
	_, running, err := suite.provider.Manager.Running(ctx)
	if err == nil && running {
		return
	}
	s.t.Errorf("fedop-manager is not running at the end of %q (err %v); starting it for the next scenario", s.title, err)
	if err := suite.provider.Manager.Start(ctx); err != nil {
		s.t.Errorf("starting fedop-manager: %v", err)
	}
}

// memberClient returns the client of the cluster that member name reaches.
func (s *scenario) memberClient(name string) client.Client {
	c, ok := suite.members[s.clusters[name]]
	require.True(s.t, ok, "member %s reaches no known cluster", name)
	return c
}

// members returns the scenario's member names, sorted.
func (s *scenario) members() []string {
	return slices.Sorted(maps.Keys(s.clusters))
}

// watch starts the scenario's checker; it stops when the test ends.
func (s *scenario) watch() {
	s.t.Helper()
	cfgs := map[string]*rest.Config{}
	for name, cluster := range s.clusters {
		cfgs[name] = suite.memberConfigs[cluster]
	}
	c, err := StartChecker(s.t.Context(), CheckerOptions{Host: suite.hostConfig, Members: cfgs, Namespace: s.ns, Name: s.name})
	require.NoError(s.t, err, "starting the checker")
	s.checker = c
	s.t.Cleanup(c.Stop)
}

// sample returns the sample FederationCluster (config/samples), named and
// placed for this scenario: its members k8s-a and k8s-b replaced by the
// suite's first two, spec.minReadySeconds set to minReadySeconds.
func (s *scenario) sample() *v1alpha1.FederationCluster {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.cfg.RepoRoot, sampleFile))
	require.NoError(s.t, err)
	fc := &v1alpha1.FederationCluster{}
	require.NoError(s.t, yaml.UnmarshalStrict(data, fc), "decoding %s", sampleFile)
	fc.Name, fc.Namespace = s.name, s.ns
	fc.Spec.MinReadySeconds = minReadySeconds
	for i := range fc.Spec.Components {
		useWorkload(&fc.Spec.Components[i].Template.Spec)
	}
	rename := map[string]string{"k8s-a": suite.memberA, "k8s-b": suite.memberB}
	for i := range fc.Spec.Components {
		for j := range fc.Spec.Components[i].Topology {
			p := &fc.Spec.Components[i].Topology[j]
			if to, ok := rename[p.Member]; ok {
				p.Member = to
			}
		}
	}
	return fc
}

// create creates fc (starting the checker first, so that it sees every
// pod from the first) and deletes it when the test ends.
func (s *scenario) create(fc *v1alpha1.FederationCluster) {
	s.t.Helper()
	if s.checker == nil {
		s.watch()
	}
	require.NoError(s.t, suite.host.Create(s.t.Context(), fc), "creating FederationCluster %s", s.key)
	s.t.Cleanup(s.deleteFC)
}

// createSample creates the sample, waits until it is settled, and starts
// the checker's measurement window: creation is not disruption. It returns
// the settled FederationCluster and what the checker saw of the
// initialization.
func (s *scenario) createSample() (*v1alpha1.FederationCluster, Report) {
	s.t.Helper()
	s.create(s.sample())
	fc := s.settle()
	init := s.checker.Report()
	s.checker.Reset()
	return fc, init
}

// deleteFC deletes the scenario's FederationCluster if it exists and waits
// until it is gone; past the timeout it drops the finalizer and fails.
func (s *scenario) deleteFC() {
	ctx, cancel := cleanupContext()
	defer cancel()
	fc := &v1alpha1.FederationCluster{}
	if err := suite.host.Get(ctx, s.key, fc); apierrors.IsNotFound(err) {
		return
	}
	if s.checker != nil {
		s.checker.Expect(nil)
	}
	if err := suite.host.Delete(ctx, fc); err != nil && !apierrors.IsNotFound(err) {
		s.t.Errorf("deleting FederationCluster %s: %v", s.key, err)
	}
	err := wait.PollUntilContextTimeout(ctx, poll, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(suite.host.Get(ctx, s.key, fc)), nil
	})
	if err == nil {
		return
	}
	s.t.Errorf("FederationCluster %s was not deleted within 90s; dropping its finalizer", s.key)
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.host.Get(ctx, s.key, fc); err != nil {
			return client.IgnoreNotFound(err)
		}
		fc.Finalizers = nil
		return suite.host.Update(ctx, fc)
	})
}

// get reads the FederationCluster from the host.
func (s *scenario) get(t require.TestingT) *v1alpha1.FederationCluster {
	fc := &v1alpha1.FederationCluster{}
	require.NoError(t, suite.host.Get(context.Background(), s.key, fc))
	return fc
}

// update changes the spec with edit, retrying on conflicts (fedop writes
// status meanwhile). The checker is told the new spec first (Expect), so
// that its desired counts change before fedop can act.
func (s *scenario) update(edit func(*v1alpha1.FederationCluster)) {
	s.t.Helper()
	fc := &v1alpha1.FederationCluster{}
	require.NoError(s.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.host.Get(s.t.Context(), s.key, fc); err != nil {
			return err
		}
		edit(fc)
		if s.checker != nil {
			s.checker.Expect(fc.Spec.DeepCopy())
		}
		return suite.host.Update(s.t.Context(), fc)
	}), "updating FederationCluster %s", s.key)
}

// useWorkload makes spec's containers run the configured workload image
// (Config.WorkloadImage), keeping each image's tag, with an HTTP readiness
// probe on its port: where a kubelet runs the pods, Ready then means the
// container answered. Without a workload image it changes nothing.
func useWorkload(spec *corev1.PodSpec) {
	if suite.cfg.WorkloadImage == "" {
		return
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.Image = suite.cfg.WorkloadImage + c.Image[strings.LastIndex(c.Image, ":"):]
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(suite.cfg.WorkloadPort))}},
			PeriodSeconds: 1,
		}
	}
}

// setImages moves every component's image to tag.
func (s *scenario) setImages(tag string) {
	s.update(func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			ctr := &fc.Spec.Components[i].Template.Spec.Containers[0]
			ctr.Image = ctr.Image[:strings.LastIndex(ctr.Image, ":")+1] + tag
		}
	})
}

// settle waits until the FederationCluster's status describes its spec
// fully rolled out, and checks the same from the members: every placement
// has its replicas, Ready, at its update revision. fedop's status says
// when to look; the members say whether it is true.
func (s *scenario) settle() *v1alpha1.FederationCluster {
	s.t.Helper()
	return s.settleWithin(settleTimeout)
}

// settleWithin is settle with its own timeout, for rollouts longer than
// the sample's (a real database's).
func (s *scenario) settleWithin(timeout time.Duration) *v1alpha1.FederationCluster {
	s.t.Helper()
	var fc *v1alpha1.FederationCluster
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		fc = s.get(c)
		st := fc.Status
		want := totalReplicas(fc)
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
		s.assertPodsMatchSpec(c, fc)
	}, timeout, poll, "FederationCluster %s did not settle", s.key)
	return fc
}

// assertPodsMatchSpec checks the live pods in the members against fc's
// spec: each placement has exactly its replicas, all Ready and not
// terminating, labelled with the placement's revision and running its
// effective image.
func (s *scenario) assertPodsMatchSpec(t assert.TestingT, fc *v1alpha1.FederationCluster) {
	pods := s.livePods(t)
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		for j := range c.Topology {
			p := &c.Topology[j]
			tmpl := federation.EffectiveTemplate(c, p)
			rev, err := federation.Revision(tmpl)
			if !assert.NoError(t, err) {
				return
			}
			n := 0
			for key, pod := range pods {
				if pod.Labels[v1alpha1.LabelMember] != p.Member || pod.Labels[v1alpha1.LabelComponent] != c.Name {
					continue
				}
				n++
				assert.True(t, podwatch.Ready(&pod), "%s is not Ready", key)
				assert.Nil(t, pod.DeletionTimestamp, "%s is terminating", key)
				assert.Equal(t, rev, pod.Labels[v1alpha1.LabelRevision], "revision of %s", key)
				assert.Equal(t, tmpl.Spec.Containers[0].Image, pod.Spec.Containers[0].Image, "image of %s", key)
			}
			assert.EqualValues(t, p.Replicas, n, "pods of %s in %s", c.Name, p.Member)
		}
	}
}

func totalReplicas(fc *v1alpha1.FederationCluster) int32 {
	var n int32
	for _, c := range fc.Spec.Components {
		for _, p := range c.Topology {
			n += p.Replicas
		}
	}
	return n
}

func assertCondition(t assert.TestingT, fc *v1alpha1.FederationCluster, typ string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(fc.Status.Conditions, typ)
	if !assert.NotNil(t, c, "condition %s", typ) {
		return false
	}
	return assert.Equal(t, status, c.Status, "condition %s: %s", typ, c.Message) &&
		assert.Equal(t, reason, c.Reason, "reason of condition %s: %s", typ, c.Message)
}

// livePods returns fedop's pods of the scenario's FederationCluster, read
// from the members' API servers (no cache), by member/name.
func (s *scenario) livePods(t assert.TestingT) map[string]corev1.Pod {
	return s.livePodsIn(t, s.members()...)
}

// livePodsIn is livePods of the given members only: those that are up.
func (s *scenario) livePodsIn(t assert.TestingT, members ...string) map[string]corev1.Pod {
	out := map[string]corev1.Pod{}
	for _, m := range members {
		var list corev1.PodList
		err := s.memberClient(m).List(context.Background(), &list, client.InNamespace(s.ns), client.MatchingLabels{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: s.name, v1alpha1.LabelMember: m,
		})
		if !assert.NoError(t, err, "listing pods in %s", m) {
			continue
		}
		for _, p := range list.Items {
			out[m+"/"+p.Name] = p
		}
	}
	return out
}

// samplePods are the sample's pods as member/name: ordinals are unique per
// component across members and given in topology order.
func (s *scenario) samplePods() []string {
	a, b, n := suite.memberA, suite.memberB, s.name
	return []string{
		a + "/" + n + "-pd-0", a + "/" + n + "-pd-1", b + "/" + n + "-pd-2",
		a + "/" + n + "-tikv-0", a + "/" + n + "-tikv-1", b + "/" + n + "-tikv-2",
		a + "/" + n + "-tidb-0", b + "/" + n + "-tidb-1",
	}
}

// sampleUpgradeOrder is the order in which an upgrade of every component
// of the sample replaces its pods: components in spec order; within a
// component, members take turns in topology order, starting with the
// first; within a member, the highest ordinal first.
func (s *scenario) sampleUpgradeOrder() []string {
	a, b, n := suite.memberA, suite.memberB, s.name
	return []string{
		a + "/" + n + "-pd-1", b + "/" + n + "-pd-2", a + "/" + n + "-pd-0",
		a + "/" + n + "-tikv-1", b + "/" + n + "-tikv-2", a + "/" + n + "-tikv-0",
		a + "/" + n + "-tidb-0", b + "/" + n + "-tidb-1",
	}
}

// waitDeletions waits until the checker has seen at least n deletions.
func (s *scenario) waitDeletions(n int) Report {
	s.t.Helper()
	require.Eventually(s.t, func() bool { return len(s.checker.Report().Deletions) >= n }, settleTimeout, poll,
		"the checker did not see %d deletions; it saw %v", n, s.checker.Report().DeletionOrder())
	return s.checker.Report()
}

// assertOneAtATime checks a rollout's report: the invariant held, every
// deletion by fedop was issued with no other replica disrupted, and each
// step started only after the previous one ended.
func (s *scenario) assertOneAtATime(r Report) {
	s.t.Helper()
	assert.LessOrEqual(s.t, r.MaxDisrupted, 1, "replicas disrupted at once (at %s)", r.MaxDisruptedAt.Format("15:04:05.000"))
	var fedop []string
	before := []int{}
	for _, d := range r.Deletions {
		if !d.External {
			fedop = append(fedop, d.String())
			before = append(before, d.DisruptedBefore)
		}
	}
	assert.Equal(s.t, make([]int, len(before)), before, "replicas disrupted when each of fedop's deletions was seen: %v", fedop)
	if !assert.Empty(s.t, r.Overlaps, "steps that overlapped") {
		s.t.Logf("checker history:\n%s", FormatHistory(r.History))
	}
}

// assertReplaced checks that the pods in order were replaced (same member
// and name, new UID) and that every other pod of before is the same
// instance.
func (s *scenario) assertReplaced(before map[string]corev1.Pod, order []string) {
	s.t.Helper()
	after := s.livePods(s.t)
	assert.ElementsMatch(s.t, slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after)), "pods keep their names and members")
	for key, pod := range after {
		if slices.Contains(order, key) {
			assert.NotEqual(s.t, before[key].UID, pod.UID, "%s was not replaced", key)
		} else {
			assert.Equal(s.t, before[key].UID, pod.UID, "%s was replaced", key)
		}
	}
}

// window says what a scenario's measurement window held, for the closing
// summary.
type window int

const (
	// windowRollout: rollout steps and nothing else.
	windowRollout window = iota
	// windowFaults: rollout steps with faults injected (kills, a member down,
	// rotated credentials): the steps' overheads include the faults.
	windowFaults
	// windowTeardown: a FederationCluster's deletion, whose pods all go at once:
	// not steps at all.
	windowTeardown
)

// finish ends the scenario's measurement: the checker's maximum of
// disrupted replicas must not exceed one, and no two live pods may have
// shared a name. Its figures are logged and kept for the closing summary.
func (s *scenario) finish(w window) {
	s.t.Helper()
	r := s.checker.Report()
	s.t.Logf("checker (%s window): %s", r.Window.Round(time.Millisecond), r.Summary())
	s.t.Logf("deletions: %v", r.DeletionOrder())
	if !assert.LessOrEqual(s.t, r.MaxDisrupted, 1, "the checker saw %d replicas disrupted at %s", r.MaxDisrupted, r.MaxDisruptedAt.Format("15:04:05.000")) {
		s.t.Logf("checker history:\n%s", FormatHistory(r.History))
	}
	assert.Empty(s.t, r.Duplicates, "pods that shared a name across members")
	recordFigures(s.title, r, w)
}

// down takes member's API server down until up, or the end of the test.
func (s *scenario) down(name string) {
	s.t.Helper()
	require.NoError(s.t, suite.provider.Members.Down(s.t.Context(), name), "taking %s down", name)
	s.t.Logf("member %s is down", name)
	s.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if err := suite.provider.Members.Up(ctx, name); err != nil {
			s.t.Errorf("bringing %s up: %v", name, err)
		}
	})
}

func (s *scenario) up(name string) {
	s.t.Helper()
	require.NoError(s.t, suite.provider.Members.Up(s.t.Context(), name), "bringing %s up", name)
	s.t.Logf("member %s is up", name)
}

// cordon marks the nodes of zone in cluster unschedulable, so that a pod
// created there with that zone's node selector stays Pending: a way to
// hold a rollout at a chosen step that works with any provider. uncordon
// undoes it; so does the end of the test.
func (s *scenario) cordon(cluster, zone string) {
	s.t.Helper()
	s.setUnschedulable(s.t.Context(), cluster, zone, true)
	s.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		s.setUnschedulable(ctx, cluster, zone, false)
	})
}

func (s *scenario) uncordon(cluster, zone string) {
	s.t.Helper()
	s.setUnschedulable(s.t.Context(), cluster, zone, false)
}

func (s *scenario) setUnschedulable(ctx context.Context, cluster, zone string, v bool) {
	s.t.Helper()
	c := suite.members[cluster]
	var nodes corev1.NodeList
	require.NoError(s.t, c.List(ctx, &nodes, client.MatchingLabels{corev1.LabelTopologyZone: zone}))
	require.NotEmpty(s.t, nodes.Items, "no node in zone %s of %s", zone, cluster)
	for i := range nodes.Items {
		n := &nodes.Items[i]
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = v
		require.NoError(s.t, c.Patch(ctx, n, patch), "node %s of %s", n.Name, cluster)
	}
}

// waitCondition waits until the FederationCluster's condition typ has
// status and reason, and its message satisfies check (nil: anything).
//
//nolint:unparam // status is spelled out at each call with its type and reason, as a condition reads; only False is waited for so far.
func (s *scenario) waitCondition(typ string, status metav1.ConditionStatus, reason string, check func(assert.TestingT, string)) *v1alpha1.FederationCluster {
	s.t.Helper()
	var fc *v1alpha1.FederationCluster
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		fc = s.get(c)
		cond := meta.FindStatusCondition(fc.Status.Conditions, typ)
		require.NotNil(c, cond, "condition %s", typ)
		assert.Equal(c, status, cond.Status, "condition %s: %s", typ, cond.Message)
		assert.Equal(c, reason, cond.Reason, "reason of %s: %s", typ, cond.Message)
		if check != nil {
			check(c, cond.Message)
		}
	}, waitTimeout, poll, "condition %s of %s", typ, s.key)
	return fc
}

// names returns a message check: the message names every one of in and
// none of out.
func names(in []string, out ...string) func(assert.TestingT, string) {
	return func(t assert.TestingT, msg string) {
		for _, n := range in {
			assert.Contains(t, msg, n)
		}
		for _, n := range out {
			assert.NotContains(t, msg, n)
		}
	}
}

// checkDecoys checks that every decoy of the run is still there, the same
// instance, not being deleted, with its labels, and never written by fedop.
func checkDecoys(t *testing.T) {
	t.Helper()
	ctx, cancel := cleanupContext()
	defer cancel()
	for _, d := range suite.decoys {
		got := d.obj.DeepCopyObject().(client.Object)
		if !assert.NoError(t, suite.members[d.member].Get(ctx, client.ObjectKeyFromObject(d.obj), got), "decoy %s", d) {
			continue
		}
		assert.Equal(t, d.obj.GetUID(), got.GetUID(), "decoy %s was replaced", d)
		assert.Nil(t, got.GetDeletionTimestamp(), "decoy %s is being deleted", d)
		// The API server may add labels (topology.kubernetes.io/zone and
		// region, copied from the node at binding); the decoy's own stay.
		for k, v := range d.obj.GetLabels() {
			assert.Equal(t, v, got.GetLabels()[k], "label %s of decoy %s", k, d)
		}
		for _, mf := range got.GetManagedFields() {
			assert.NotEqual(t, v1alpha1.FieldManager, mf.Manager, "fedop wrote to decoy %s", d)
		}
	}
}

// table returns the FederationCluster as the API server's table of printer
// columns: what `kubectl get fc` shows.
func (s *scenario) table() *metav1.Table {
	s.t.Helper()
	cs, err := kubernetes.NewForConfig(suite.hostConfig)
	require.NoError(s.t, err)
	raw, err := cs.Discovery().RESTClient().Get().
		AbsPath("/apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "namespaces", s.ns, "federationclusters", s.name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(s.t.Context())
	require.NoError(s.t, err)
	tbl := &metav1.Table{}
	require.NoError(s.t, json.Unmarshal(raw, tbl))
	return tbl
}

// warningEvent waits for a Warning event with reason on the host Secret
// fedop-system/secret, and returns its note.
func warningEvent(t *testing.T, secret, reason string) string {
	t.Helper()
	var note string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var list eventsv1.EventList
		require.NoError(c, suite.host.List(context.Background(), &list, client.InNamespace(member.DefaultNamespace)))
		for _, e := range list.Items {
			if e.Regarding.Name == secret && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				note = e.Note
				return
			}
		}
		assert.Fail(c, fmt.Sprintf("no Warning event %s on Secret %s/%s", reason, member.DefaultNamespace, secret))
	}, waitTimeout, poll)
	return note
}

// assertRolloutOrder checks a rollout's deletions in r against want, the
// planner's order when every pod is available: every pod goes exactly once,
// and the pods that were available when their turn came go in want's
// order. A pod that was not (an etcd election touches readiness, and so
// does a node too loaded to answer a probe in time) is replaced first, as
// rollout's nextVictim does; for it only the "once" is checked.
func assertRolloutOrder(t *testing.T, want []string, r Report) {
	t.Helper()
	assert.ElementsMatch(t, want, r.DeletionOrder(), "every pod replaced once")
	unavailable := r.UnavailableDeleted()
	var wantAvailable []string
	for _, key := range want {
		if !slices.Contains(unavailable, key) {
			wantAvailable = append(wantAvailable, key)
		}
	}
	assert.Equal(t, wantAvailable, r.AvailableOrder(), "deletion order of the pods available when their turn came")
	if len(unavailable) > 0 {
		t.Logf("replaced first, being unavailable: %v; deletion order %v", unavailable, r.DeletionOrder())
	}
}
