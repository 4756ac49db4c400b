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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/internal/testenv"
)

// The integration tests run fedop against real API servers: a host and
// members k8s-a and k8s-b. See harness_test.go for the fake kubelet, the
// invariant checker and the in-process manager.

// initialPods are sampleFC's pods by member: ordinals are unique per
// component across members and assigned in topology order.
var initialPods = []string{
	"k8s-a/demo-pd-0", "k8s-a/demo-pd-1", "k8s-b/demo-pd-2",
	"k8s-a/demo-tikv-0", "k8s-a/demo-tikv-1", "k8s-b/demo-tikv-2", "k8s-b/demo-tikv-3",
	"k8s-a/demo-tidb-0",
}

// upgradeOrder is the order in which an upgrade of every component of
// sampleFC replaces its pods: components in spec order; within a
// component, members take turns in topology order starting with k8s-a;
// within a member, the highest ordinal first.
var upgradeOrder = []string{
	"k8s-a/demo-pd-1", "k8s-b/demo-pd-2", "k8s-a/demo-pd-0",
	"k8s-a/demo-tikv-1", "k8s-b/demo-tikv-3", "k8s-a/demo-tikv-0", "k8s-b/demo-tikv-2",
	"k8s-a/demo-tidb-0",
}

// scenario is one test's FederationCluster, settled after initialization,
// with its checker, decoys and manager.
type scenario struct {
	env     *testenv.Federation
	kubelet *kubelet
	ns      string
	key     client.ObjectKey
	checker *checker
	decoys  *decoys
	fedop   *fedop
}

// initialized sets up a namespace named after base with decoys, a checker and a manager,
// creates sampleFC in it and waits until it is settled.
func initialized(t *testing.T, base string) *scenario {
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
	s.fedop = startFedop(t, env, ns+"-1")
	fc := sampleFC(ns)
	s.checker.setDesired(fc)
	createFC(t, env, fc)
	requireSettled(t, env, s.key)
	require.ElementsMatch(t, initialPods, slices.Collect(maps.Keys(memberPods(t, env, ns))))
	return s
}

// dumpState logs the FederationCluster's status and every member's pods of
// its namespace, to explain a failure.
func dumpState(t *testing.T, env *testenv.Federation, key client.ObjectKey) {
	fc := &v1alpha1.FederationCluster{}
	if err := env.Host.Client.Get(context.Background(), key, fc); err == nil {
		st, _ := yaml.Marshal(fc.Status)
		t.Logf("FederationCluster %s (generation %d) status:\n%s", key, fc.Generation, st)
	}
	for _, m := range env.Members {
		var pods corev1.PodList
		if err := m.Client.List(context.Background(), &pods, client.InNamespace(key.Namespace)); err != nil {
			continue
		}
		for _, p := range pods.Items {
			ready := podwatch.Ready(&p)
			t.Logf("%s/%s uid=%s revision=%s ready=%v deleting=%v", m.Name, p.Name, p.UID, p.Labels[v1alpha1.LabelRevision], ready, p.DeletionTimestamp != nil)
		}
	}
}

// setImages moves every component to image tag tag.
func setImages(tag string) func(*v1alpha1.FederationCluster) {
	return func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			ctr := &fc.Spec.Components[i].Template.Spec.Containers[0]
			ctr.Image = ctr.Image[:strings.LastIndex(ctr.Image, ":")+1] + tag
		}
	}
}

// requireDeletions waits until the checker has seen n deletions and
// returns its report.
func requireDeletions(t *testing.T, c *checker, n int) checkerReport {
	t.Helper()
	require.Eventually(t, func() bool { return len(c.report().deletions) >= n }, wait, tick, "the checker did not see %d deletions", n)
	return c.report()
}

// assertUpgraded checks the end of an upgrade from pods before: the pods
// in order were replaced, each keeping its name and member, and no other;
// never more than one pod was unavailable, and each deletion came with
// every other pod available.
func assertUpgraded(t *testing.T, s *scenario, before map[string]corev1.Pod, order []string) {
	t.Helper()
	r := requireDeletions(t, s.checker, len(order))
	assert.Equal(t, order, r.deletions, "deletion order")
	assert.LessOrEqual(t, r.maxUnavailable, 1, "pods unavailable at once")
	assert.Equal(t, make([]int, len(r.deletions)), r.unavailableAtDeletion, "pods unavailable when each deletion was issued")

	fc := getFC(t, s.env, s.key)
	after := memberPods(t, s.env, s.ns)
	require.ElementsMatch(t, slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after)), "pods keep their names and members")
	for key, pod := range after {
		if slices.Contains(order, key) {
			assert.NotEqual(t, before[key].UID, pod.UID, "%s was not replaced", key)
		} else {
			assert.Equal(t, before[key].UID, pod.UID, "%s was replaced", key)
		}
		assert.Equal(t, expectedRevision(t, fc, pod), pod.Labels[v1alpha1.LabelRevision], "revision of %s", key)
	}
}

// expectedRevision computes the update revision of pod's placement from
// fc's spec with the exported template functions.
func expectedRevision(t *testing.T, fc *v1alpha1.FederationCluster, pod corev1.Pod) string {
	t.Helper()
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		if c.Name != pod.Labels[v1alpha1.LabelComponent] {
			continue
		}
		for j := range c.Topology {
			if c.Topology[j].Member == pod.Labels[v1alpha1.LabelMember] {
				rev, err := federation.Revision(federation.EffectiveTemplate(c, &c.Topology[j]))
				require.NoError(t, err)
				return rev
			}
		}
	}
	t.Fatalf("pod %s has no placement in the spec", pod.Name)
	return ""
}

func TestInitialize(t *testing.T) {
	s := initialized(t, "initialize")
	fc := getFC(t, s.env, s.key)
	assert.Contains(t, fc.Finalizers, v1alpha1.Finalizer)

	t.Run("pods", func(t *testing.T) {
		for key, pod := range memberPods(t, s.env, s.ns) {
			memberName, component := strings.SplitN(key, "/", 2)[0], pod.Labels[v1alpha1.LabelComponent]
			zone := strings.TrimPrefix(memberName, "k8s-")
			assert.True(t, strings.HasPrefix(pod.Name, fcName+"-"+component+"-"), "%s has component label %q", key, component)
			assert.Equal(t, map[string]string{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
				v1alpha1.LabelInstance:  fcName,
				v1alpha1.LabelComponent: component,
				v1alpha1.LabelMember:    memberName,
				v1alpha1.LabelRevision:  expectedRevision(t, fc, pod),
				"app":                   fcName + "-" + component,
				"example.com/zone":      zone,
			}, pod.Labels, "labels of %s", key)
			assert.Equal(t, map[string]string{"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": zone}, pod.Spec.NodeSelector,
				"node selector of %s: the placement's merged over the template's", key)
			assert.Equal(t, pod.Name, pod.Spec.Hostname, "hostname of %s", key)
			assert.Equal(t, fcName+"-"+component, pod.Spec.Subdomain, "subdomain of %s", key)
			require.Len(t, pod.Spec.Containers, 1)
			env := map[string]string{}
			for _, e := range pod.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			want := map[string]string{"COMPONENT": component}
			if key == "k8s-b/demo-tikv-2" || key == "k8s-b/demo-tikv-3" {
				want["TIKV_LABELS"] = "zone=b"
			}
			assert.Equal(t, want, env, "env of %s", key)
		}
	})

	t.Run("headless services in the members hosting each component", func(t *testing.T) {
		hosted := map[string][]string{"pd": {memberA, memberB}, "tikv": {memberA, memberB}, "tidb": {memberA}}
		ports := map[string]int32{"pd": 2379, "tikv": 20160, "tidb": 4000}
		for component, members := range hosted {
			name := federation.ServiceName(fc, component)
			assert.Equal(t, fcName+"-"+component, name)
			for _, m := range s.env.Members {
				var svc corev1.Service
				err := m.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, &svc)
				if !slices.Contains(members, m.Name) {
					assert.True(t, apierrors.IsNotFound(err), "service %s in %s, which hosts no %s pod: %v", name, m.Name, component, err)
					continue
				}
				if !assert.NoError(t, err, "service %s in %s", name, m.Name) {
					continue
				}
				assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "%s in %s is not headless", name, m.Name)
				assert.True(t, svc.Spec.PublishNotReadyAddresses, "%s in %s does not publish not-ready addresses", name, m.Name)
				assert.Nil(t, svc.Spec.Selector, "%s in %s has a selector: fedop's EndpointSlices back it", name, m.Name)
				assert.Equal(t, map[string]string{
					v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName,
					v1alpha1.LabelComponent: component, v1alpha1.LabelMember: m.Name,
				}, svc.Labels, "labels of %s in %s", name, m.Name)
				if assert.Len(t, svc.Spec.Ports, 1, "only named ports are published") {
					assert.Equal(t, "main", svc.Spec.Ports[0].Name)
					assert.Equal(t, ports[component], svc.Spec.Ports[0].Port)
				}
			}
		}
	})

	t.Run("status", func(t *testing.T) {
		st := fc.Status
		assert.EqualValues(t, 8, st.Replicas)
		wantMembers := map[string][]int32{"pd": {2, 1}, "tikv": {2, 2}, "tidb": {1, 0}}
		for _, cs := range st.Components {
			var got []int32
			for i, ps := range cs.Members {
				got = append(got, ps.Replicas)
				assert.Equal(t, memberNames[i], ps.Member, "members of %s in topology order", cs.Name)
				assert.Equal(t, ps.Replicas, ps.ReadyReplicas, "%s/%s", cs.Name, ps.Member)
				assert.Equal(t, ps.UpdateRevision, ps.CurrentRevision, "%s/%s", cs.Name, ps.Member)
			}
			assert.Equal(t, wantMembers[cs.Name], got, "placements of %s", cs.Name)
		}
		require.Len(t, st.Members, 2)
		for i, ms := range st.Members {
			assert.Equal(t, memberNames[i], ms.Name)
			assert.True(t, ms.Connected, "%s", ms.Name)
		}
	})

	t.Run("components are initialized in spec order", func(t *testing.T) {
		h := s.checker.report().history
		pd, tikv, tidb := historyOf(h, "pd"), historyOf(h, "tikv"), historyOf(h, "tidb")
		require.Len(t, pd, 6, "create and ready of 3 pd pods: %v", h)
		require.Len(t, tikv, 8, "create and ready of 4 tikv pods: %v", h)
		require.Len(t, tidb, 2, "create and ready of 1 tidb pod: %v", h)
		// Every pod of a component is Ready before the next component's
		// first pod is created.
		assert.Less(t, slices.Index(h, pd[len(pd)-1]), slices.Index(h, tikv[0]), "history: %v", h)
		assert.Less(t, slices.Index(h, tikv[len(tikv)-1]), slices.Index(h, tidb[0]), "history: %v", h)
		assert.Empty(t, s.checker.report().deletions)
	})

	s.decoys.assertUntouched(t)
}

func TestUpgradeOrderAndAvailability(t *testing.T) {
	s := initialized(t, "upgrade")
	before := memberPods(t, s.env, s.ns)
	s.checker.reset()

	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	fc := requireSettled(t, s.env, s.key)

	assertUpgraded(t, s, before, upgradeOrder)
	for key, pod := range memberPods(t, s.env, s.ns) {
		assert.True(t, strings.HasSuffix(pod.Spec.Containers[0].Image, ":v8.5.1"), "image of %s: %s", key, pod.Spec.Containers[0].Image)
	}
	for _, cs := range fc.Status.Components {
		for _, ps := range cs.Members {
			assert.Equal(t, ps.UpdateRevision, ps.CurrentRevision, "%s/%s", cs.Name, ps.Member)
			assert.Equal(t, ps.Replicas, ps.UpdatedReplicas, "%s/%s", cs.Name, ps.Member)
		}
	}
	s.decoys.assertUntouched(t)

	// The metrics say the same: one step per pod of the upgrade, the
	// conditions, and the pods per member and state.
	metricsOf := func(name string) map[string]float64 {
		families, err := ctrlmetrics.Registry.Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["namespace"] != s.ns {
					continue
				}
				delete(labels, "namespace")
				delete(labels, "name")
				key := fmt.Sprint(labels)
				out[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		return out
	}
	assert.Equal(t, float64(len(upgradeOrder)), metricsOf("fedop_rollout_steps_total")["map[operation:Upgrade]"], "steps of the upgrade")
	conditions := metricsOf("fedop_federationcluster_condition")
	assert.Equal(t, 1.0, conditions["map[status:True type:Ready]"])
	assert.Equal(t, 0.0, conditions["map[status:False type:Ready]"])
	assert.Equal(t, 1.0, conditions["map[status:False type:Progressing]"])
	pods := metricsOf("fedop_federationcluster_pods")
	assert.Equal(t, 5.0, pods["map[member:k8s-a state:desired]"])
	assert.Equal(t, 5.0, pods["map[member:k8s-a state:updated]"])
	assert.Equal(t, 3.0, pods["map[member:k8s-b state:ready]"])
}

func TestEnvChangeOnOnePlacement(t *testing.T) {
	s := initialized(t, "env")
	before := memberPods(t, s.env, s.ns)
	revisions := map[string]string{}
	for _, cs := range getFC(t, s.env, s.key).Status.Components {
		for _, ps := range cs.Members {
			revisions[cs.Name+"/"+ps.Member] = ps.UpdateRevision
		}
	}
	s.checker.reset()

	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[1].Topology[1].Env = []corev1.EnvVar{{Name: "TIKV_LABELS", Value: "zone=b,rack=r1"}}
	})
	fc := requireSettled(t, s.env, s.key)

	// Only tikv's k8s-b placement changed: only its pods roll, highest
	// ordinal first.
	assertUpgraded(t, s, before, []string{"k8s-b/demo-tikv-3", "k8s-b/demo-tikv-2"})
	for _, key := range []string{"k8s-b/demo-tikv-2", "k8s-b/demo-tikv-3"} {
		assert.Contains(t, memberPods(t, s.env, s.ns)[key].Spec.Containers[0].Env, corev1.EnvVar{Name: "TIKV_LABELS", Value: "zone=b,rack=r1"}, key)
	}
	for _, cs := range fc.Status.Components {
		for _, ps := range cs.Members {
			if cs.Name == "tikv" && ps.Member == memberB {
				assert.NotEqual(t, revisions[cs.Name+"/"+ps.Member], ps.UpdateRevision, "revision of %s/%s", cs.Name, ps.Member)
			} else {
				assert.Equal(t, revisions[cs.Name+"/"+ps.Member], ps.UpdateRevision, "revision of %s/%s", cs.Name, ps.Member)
			}
		}
	}
	s.decoys.assertUntouched(t)
}

func TestScaleInAndOut(t *testing.T) {
	s := initialized(t, "scale")

	// change edits the spec; the checker learns the new desired counts
	// before fedop does.
	change := func(edit func(*v1alpha1.FederationCluster)) *v1alpha1.FederationCluster {
		want := getFC(t, s.env, s.key)
		edit(want)
		s.checker.setDesired(want)
		updateFC(t, s.env, s.key, edit)
		return requireSettled(t, s.env, s.key)
	}

	t.Run("in: highest ordinal first, one at a time", func(t *testing.T) {
		before := memberPods(t, s.env, s.ns)
		s.checker.reset()
		change(func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].Topology[0].Replicas = 1 // pd in k8s-a: 2 -> 1
			fc.Spec.Components[1].Topology[1].Replicas = 0 // tikv in k8s-b: 2 -> 0
		})
		r := requireDeletions(t, s.checker, 3)
		assert.Equal(t, []string{"k8s-a/demo-pd-1", "k8s-b/demo-tikv-3", "k8s-b/demo-tikv-2"}, r.deletions)
		// Only surplus pods go: no placement ever drops below its replicas.
		assert.Zero(t, r.maxUnavailable)
		after := memberPods(t, s.env, s.ns)
		assert.ElementsMatch(t, []string{"k8s-a/demo-pd-0", "k8s-b/demo-pd-2", "k8s-a/demo-tikv-0", "k8s-a/demo-tikv-1", "k8s-a/demo-tidb-0"},
			slices.Collect(maps.Keys(after)))
		for key, pod := range after {
			assert.Equal(t, before[key].UID, pod.UID, "%s was replaced", key)
		}
		// k8s-b hosts no tikv pod any more: its Service goes; k8s-a's stays.
		assert.Eventually(t, func() bool {
			err := s.env.Member(memberB).Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: fcName + "-tikv"}, &corev1.Service{})
			return apierrors.IsNotFound(err)
		}, wait, tick, "service %s-tikv is still in k8s-b", fcName)
		assert.NoError(t, s.env.Member(memberA).Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: fcName + "-tikv"}, &corev1.Service{}))
	})

	t.Run("out: new ordinals, one at a time", func(t *testing.T) {
		s.checker.reset()
		change(func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].Topology[1].Replicas = 2 // pd in k8s-b: 1 -> 2
			fc.Spec.Components[1].Topology[0].Replicas = 3 // tikv in k8s-a: 2 -> 3
		})
		r := s.checker.report()
		assert.Empty(t, r.deletions)
		// Ordinals are never handed out twice: pd has used 0 to 2, so the
		// new pod is 3 although 1 is free; tikv has used 0 to 3.
		assert.Equal(t, []string{
			"create k8s-b/demo-pd-3", "ready k8s-b/demo-pd-3",
			"create k8s-a/demo-tikv-4", "ready k8s-a/demo-tikv-4",
		}, r.history)
		assert.ElementsMatch(t, []string{
			"k8s-a/demo-pd-0", "k8s-b/demo-pd-2", "k8s-b/demo-pd-3",
			"k8s-a/demo-tikv-0", "k8s-a/demo-tikv-1", "k8s-a/demo-tikv-4", "k8s-a/demo-tidb-0",
		}, slices.Collect(maps.Keys(memberPods(t, s.env, s.ns))))
		fc := getFC(t, s.env, s.key)
		assert.EqualValues(t, 4, *fc.Status.Components[0].NextOrdinal, "pd's next ordinal")
		assert.Equal(t, "2-3", fc.Status.Components[0].Members[1].Ordinals, "pd's ordinals in k8s-b")
	})

	s.decoys.assertUntouched(t)
}

func TestManagerRestartMidUpgrade(t *testing.T) {
	s := initialized(t, "restart")
	before := memberPods(t, s.env, s.ns)
	s.checker.reset()
	// The first step's replacement stays not Ready until released: the
	// first manager is stopped with that step in flight. The next step
	// must then go to k8s-b, which only status.operation remembers.
	release := s.kubelet.hold(t, s.ns, fcName+"-pd-1")

	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	r := requireDeletions(t, s.checker, 1)
	require.Equal(t, upgradeOrder[:1], r.deletions)
	op := getFC(t, s.env, s.key).Status.Operation
	require.NotNil(t, op)
	assert.Equal(t, v1alpha1.OperationUpgrade, op.Type)
	assert.Equal(t, fcName+"-pd-1", op.Pod)
	assert.Equal(t, memberA, op.Member)
	assert.Equal(t, s.fedop.identity, op.Holder)

	s.fedop.stop(t)
	// A new manager: new registry, new reconciler, no memory of the first.
	second := startFedop(t, s.env, s.ns+"-2")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		op := getFC(c, s.env, s.key).Status.Operation
		require.NotNil(c, op)
		assert.Equal(c, second.identity, op.Holder)
		assert.Equal(c, fcName+"-pd-1", op.Pod)
	}, wait, tick, "the new manager did not take over the operation")
	// The new manager has written status, so it has planned from what it
	// observed: the step in flight is not done, so nothing else may go.
	assert.Len(t, s.checker.report().deletions, 1, "the new manager deleted a pod while the step in flight was not done")

	release()
	requireSettled(t, s.env, s.key)
	assertUpgraded(t, s, before, upgradeOrder)
	s.decoys.assertUntouched(t)
}

// TestTwoManagersWithoutLeaderElection runs an upgrade with two managers
// reconciling the same FederationCluster at once, as two replicas without
// leader election would: each takes the operation over in turn with a
// resourceVersion-checked write, a step acknowledged by one (nextPod) is
// taken without a write only by that one, and the upgrade still replaces
// one pod at a time, in order, each once.
func TestTwoManagersWithoutLeaderElection(t *testing.T) {
	s := initialized(t, "twomanagers")
	before := memberPods(t, s.env, s.ns)
	startFedop(t, s.env, s.ns+"-2")
	s.checker.reset()

	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	requireSettled(t, s.env, s.key)
	assertUpgraded(t, s, before, upgradeOrder)
	s.decoys.assertUntouched(t)
}

// TestManagerRestartedAfterEveryDeletion stops the manager as soon as each
// deletion of an upgrade is seen, wherever it is in the step (waiting for
// its cache, creating the replacement, waiting for it to be Ready), and
// starts a fresh one each time.
func TestManagerRestartedAfterEveryDeletion(t *testing.T) {
	s := initialized(t, "restarts")
	before := memberPods(t, s.env, s.ns)
	s.checker.reset()

	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	current := s.fedop
	for i := 1; i < len(upgradeOrder); i++ {
		requireDeletions(t, s.checker, i)
		current.stop(t)
		current = startFedop(t, s.env, fmt.Sprintf("%s-%d", s.ns, i+1))
	}
	requireSettled(t, s.env, s.key)
	assertUpgraded(t, s, before, upgradeOrder)
	s.decoys.assertUntouched(t)
}

func TestMemberUnreachableMidUpgrade(t *testing.T) {
	s := initialized(t, "unreachable")
	before := memberPods(t, s.env, s.ns)
	s.checker.reset()
	// The first step's replacement stays not Ready until released, so that
	// k8s-b is cut off while the upgrade is known to be at that step.
	release := s.kubelet.hold(t, s.ns, fcName+"-pd-1")

	updateFC(t, s.env, s.key, setImages("v8.5.1"))
	requireDeletions(t, s.checker, 1)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod, ok := memberPods(c, s.env, s.ns)["k8s-a/demo-pd-1"]
		require.True(c, ok)
		assert.NotEqual(c, before["k8s-a/demo-pd-1"].UID, pod.UID)
	}, wait, tick, "the first replacement was not created")

	proxy := s.env.Member(memberB).Proxy
	proxy.Sever()
	t.Cleanup(proxy.Restore)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := getFC(c, s.env, s.key)
		cond := meta.FindStatusCondition(fc.Status.Conditions, v1alpha1.ConditionMembersConnected)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, v1alpha1.ReasonMemberDisconnected, cond.Reason)
		assert.Contains(c, cond.Message, memberB)
		assert.NotContains(c, cond.Message, memberA)
		assertCondition(c, fc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected)
		for _, ms := range fc.Status.Members {
			assert.Equal(c, ms.Name == memberA, ms.Connected, "member %s", ms.Name)
		}
	}, wait, tick, "k8s-b was not reported disconnected")

	// The replacement becomes available; the next step would delete a pod,
	// which must wait for k8s-b.
	release()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := getFC(c, s.env, s.key)
		require.NotNil(c, fc.Status.Operation)
		// Between steps status.operation names no pod, and Progressing
		// says what the next step waits for: k8s-b.
		assert.Empty(c, fc.Status.Operation.Pod, "the first step is not complete")
		cond := meta.FindStatusCondition(fc.Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(c, cond)
		assert.Contains(c, cond.Message, memberB)
	}, wait, tick, "fedop did not observe the first replacement available")
	// A bounded wait that asserts nothing happens is legitimate here: the
	// property is that no deletion occurs while k8s-b is down, and fedop
	// has just shown (above) that it has evaluated the state in which it
	// would otherwise take the next step.
	assert.Never(t, func() bool { return len(s.checker.report().deletions) > 1 }, 3*time.Second, tick,
		"a pod was deleted while k8s-b was unreachable")
	assert.Equal(t, upgradeOrder[:1], s.checker.report().deletions)

	proxy.Restore()
	requireSettled(t, s.env, s.key)
	assertUpgraded(t, s, before, upgradeOrder)
	s.decoys.assertUntouched(t)
}

func TestDeleteCleansEveryMember(t *testing.T) {
	s := initialized(t, "delete")
	fc := getFC(t, s.env, s.key)
	require.Contains(t, fc.Finalizers, v1alpha1.Finalizer)

	require.NoError(t, s.env.Host.Client.Delete(context.Background(), fc))
	require.Eventually(t, func() bool {
		err := s.env.Host.Client.Get(context.Background(), s.key, &v1alpha1.FederationCluster{})
		return apierrors.IsNotFound(err)
	}, wait, tick, "the FederationCluster was not deleted")

	// The finalizer goes only once every member is clean.
	for _, m := range s.env.Members {
		var pods corev1.PodList
		require.NoError(t, m.Client.List(context.Background(), &pods, client.InNamespace(s.ns)))
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		assert.ElementsMatch(t, []string{fcName + "-pd-99", fcName + "-pd-0-decoy"}, names, "pods left in %s", m.Name)
		var svcs corev1.ServiceList
		require.NoError(t, m.Client.List(context.Background(), &svcs, client.InNamespace(s.ns)))
		names = nil
		for _, svc := range svcs.Items {
			names = append(names, svc.Name)
		}
		assert.Equal(t, []string{fcName + "-decoy"}, names, "services left in %s", m.Name)
	}
	r := s.checker.report()
	assert.ElementsMatch(t, initialPods, r.deletions)
	s.decoys.assertUntouched(t)
}

// TestDeleteWaitsForUnreachableMember deletes a FederationCluster while
// k8s-b is cut off: k8s-a is cleaned at once, the finalizer stays with
// CleanedUp=False naming k8s-b, and once k8s-b is back it is cleaned too
// and the object goes.
func TestDeleteWaitsForUnreachableMember(t *testing.T) {
	s := initialized(t, "delete-unreachable")
	proxy := s.env.Member(memberB).Proxy
	proxy.Sever()
	t.Cleanup(proxy.Restore)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assertCondition(c, getFC(c, s.env, s.key), v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected)
	}, wait, tick, "k8s-b was not reported disconnected")

	require.NoError(t, s.env.Host.Client.Delete(context.Background(), getFC(t, s.env, s.key)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := getFC(c, s.env, s.key)
		cond := meta.FindStatusCondition(fc.Status.Conditions, v1alpha1.ConditionCleanedUp)
		require.NotNil(c, cond, "no CleanedUp condition")
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, v1alpha1.ReasonMemberUnreachable, cond.Reason)
		assert.Contains(c, cond.Message, memberB)
		assert.Contains(c, fc.Finalizers, v1alpha1.Finalizer)
		var remaining []string
		for key := range memberPods(c, s.env, s.ns) {
			remaining = append(remaining, key)
		}
		assert.ElementsMatch(c, []string{"k8s-b/demo-pd-2", "k8s-b/demo-tikv-2", "k8s-b/demo-tikv-3"}, remaining, "k8s-a is not clean, or k8s-b was touched")
	}, wait, tick)

	proxy.Restore()
	require.Eventually(t, func() bool {
		err := s.env.Host.Client.Get(context.Background(), s.key, &v1alpha1.FederationCluster{})
		return apierrors.IsNotFound(err)
	}, wait, tick, "the FederationCluster was not deleted after k8s-b came back")
	assert.Empty(t, memberPods(t, s.env, s.ns))
	for _, m := range s.env.Members {
		var svcs corev1.ServiceList
		require.NoError(t, m.Client.List(context.Background(), &svcs, client.InNamespace(s.ns),
			client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName}))
		assert.Empty(t, svcs.Items, "fedop's services left in %s", m.Name)
	}
	s.decoys.assertUntouched(t)
}
