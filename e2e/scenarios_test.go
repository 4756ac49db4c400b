//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/member"
)

// The scenarios of issue 4, one test each, run in this order. Each works on
// a FederationCluster of its own, in a namespace of its own, with a checker
// of its own; each ends with the manager running and every decoy untouched
// (see begin).

// TestScenario01CreateSample creates the sample: pods land in the right
// members with the contract's names, labels and node selectors, Services
// exist, `kubectl get fc` columns are filled and Ready=True. Creation is
// not disruption: the checker's window starts once it is settled.
func TestScenario01CreateSample(t *testing.T) {
	s := begin(t, "1 create the sample", "create")
	fc, init := s.createSample()
	a, b := suite.memberA, suite.memberB
	zones := map[string]string{a: "a", b: "b"}

	// Pods: names, members, labels, node selectors, nodes, DNS identity.
	pods := s.livePods(t)
	require.ElementsMatch(t, s.samplePods(), slices.Collect(maps.Keys(pods)), "pods by member")
	for key, pod := range pods {
		m, component := strings.SplitN(key, "/", 2)[0], pod.Labels[v1alpha1.LabelComponent]
		assert.True(t, strings.HasPrefix(pod.Name, fc.Name+"-"+component+"-"), "%s has component label %q", key, component)
		// fedop's labels and the template's, and besides them only what
		// the API server copies from the node at binding
		// (topology.kubernetes.io/zone and region).
		labels := maps.Clone(pod.Labels)
		maps.DeleteFunc(labels, func(k, _ string) bool { return strings.HasPrefix(k, "topology.kubernetes.io/") })
		assert.Equal(t, map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
			v1alpha1.LabelInstance:  fc.Name,
			v1alpha1.LabelComponent: component,
			v1alpha1.LabelMember:    m,
			v1alpha1.LabelRevision:  expectedRevision(t, fc, component, m),
			"app":                   "demo-" + component, // the sample template's label
		}, labels, "labels of %s", key)
		assert.Equal(t, map[string]string{corev1.LabelTopologyZone: zones[m]}, pod.Spec.NodeSelector, "node selector of %s", key)
		var node corev1.Node
		if assert.NoError(t, s.memberClient(m).Get(t.Context(), client.ObjectKey{Name: pod.Spec.NodeName}, &node), "node of %s", key) {
			assert.Equal(t, zones[m], node.Labels[corev1.LabelTopologyZone], "%s runs on %s, outside its zone", key, node.Name)
		}
		assert.Equal(t, pod.Name, pod.Spec.Hostname, "hostname of %s", key)
		assert.Equal(t, fc.Name+"-"+component, pod.Spec.Subdomain, "subdomain of %s", key)
		var env []corev1.EnvVar
		if component == "tikv" && m == b {
			env = []corev1.EnvVar{{Name: "TIKV_LABELS", Value: "zone=b"}}
		}
		assert.Equal(t, env, pod.Spec.Containers[0].Env, "env of %s: the placement's override only", key)
	}

	// Headless Services, one per component in every member hosting it.
	ports := map[string][]string{"pd": {"client:2379", "peer:2380"}, "tikv": {"server:20160"}, "tidb": {"mysql:4000"}}
	for _, m := range []string{a, b} {
		for component, want := range ports {
			var svc corev1.Service
			name := federation.ServiceName(fc, component)
			if !assert.NoError(t, s.memberClient(m).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: name}, &svc), "Service %s in %s", name, m) {
				continue
			}
			assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "%s in %s is not headless", name, m)
			assert.True(t, svc.Spec.PublishNotReadyAddresses, "%s in %s does not publish not-ready addresses", name, m)
			assert.Nil(t, svc.Spec.Selector, "%s in %s has a selector: fedop's EndpointSlices back it (scenario 20)", name, m)
			var got []string
			for _, p := range svc.Spec.Ports {
				got = append(got, fmt.Sprintf("%s:%d", p.Name, p.Port))
			}
			assert.ElementsMatch(t, want, got, "ports of %s in %s", name, m)
		}
	}

	// `kubectl get fc`: the API server's table of printer columns.
	tbl := s.table()
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	assert.Equal(t, []string{"Name", "Ready", "Members", "Replicas", "Ready-Pods", "Updated", "Operation", "Stage", "Pod", "Message", "Age"}, cols)
	if assert.Len(t, tbl.Rows, 1) {
		row := tbl.Rows[0].Cells
		assert.Equal(t, fc.Name, row[0])
		assert.Equal(t, "True", fmt.Sprint(row[1]), "column Ready")
		assert.Equal(t, "2/2", fmt.Sprint(row[2]), "column Members")
		for i := 3; i <= 5; i++ {
			assert.Equal(t, "8", fmt.Sprint(row[i]), "column %s", cols[i])
		}
		assert.Contains(t, fmt.Sprint(row[9]), "available", "column Message (Progressing)")
		t.Logf("kubectl get fc: %v", row)
	}

	// Status.
	assert.EqualValues(t, 8, fc.Status.Replicas)
	assert.Contains(t, fc.Finalizers, v1alpha1.Finalizer)
	for _, cs := range fc.Status.Components {
		require.Len(t, cs.Members, 2, "placements of %s", cs.Name)
		assert.Equal(t, []string{a, b}, []string{cs.Members[0].Member, cs.Members[1].Member}, "placements of %s in topology order", cs.Name)
	}
	for _, ms := range fc.Status.Members {
		assert.True(t, ms.Connected, "member %s", ms.Name)
	}

	// Initialization, as the checker saw it: no deletion, and each
	// component's pods all Ready before the next component's first pod.
	assert.Empty(t, init.Deletions, "deletions during initialization")
	first, last := map[string]int{}, map[string]int{}
	for i, e := range init.History {
		for _, c := range []string{"pd", "tikv", "tidb"} {
			if !strings.HasPrefix(e.Pod, fc.Name+"-"+c+"-") {
				continue
			}
			if _, ok := first[c]; !ok && e.Kind == "created" {
				first[c] = i
			}
			if e.Kind == "ready" {
				last[c] = i
			}
		}
	}
	assert.Less(t, last["pd"], first["tikv"], "tikv started before pd was Ready:\n%s", FormatHistory(init.History))
	assert.Less(t, last["tikv"], first["tidb"], "tidb started before tikv was Ready:\n%s", FormatHistory(init.History))

	// A settled federation stays still. The window is bounded; what it
	// guards against (a manager that keeps recreating or touching pods) would
	// show within a few of fedop's reconciles, which take milliseconds.
	assert.Never(t, func() bool { return len(s.checker.Report().History) > 0 }, 2*time.Second, poll, "pods changed in a settled federation")
	s.finish(windowRollout)
}

// expectedRevision computes the update revision of component's placement
// in member from fc's spec, with the functions that define it.
func expectedRevision(t *testing.T, fc *v1alpha1.FederationCluster, component, m string) string {
	t.Helper()
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		for j := range c.Topology {
			if c.Name == component && c.Topology[j].Member == m {
				rev, err := federation.Revision(federation.EffectiveTemplate(c, &c.Topology[j]))
				require.NoError(t, err)
				return rev
			}
		}
	}
	t.Fatalf("no placement of %s in %s", component, m)
	return ""
}

// TestScenario02Upgrade upgrades every image: one pod at a time, in
// component order with members alternating; status ends with updated =
// replicas and rollout Done for every component.
func TestScenario02Upgrade(t *testing.T) {
	s := begin(t, "2 upgrade the image", "upgrade")
	s.createSample()
	before := s.livePods(t)
	order := s.sampleUpgradeOrder()

	s.setImages("v8.5.1")
	fc := s.settle()

	r := s.waitDeletions(len(order))
	assert.Equal(t, order, r.DeletionOrder(), "deletion order")
	s.assertOneAtATime(r)
	s.assertReplaced(before, order)
	for key, pod := range s.livePods(t) {
		assert.True(t, strings.HasSuffix(pod.Spec.Containers[0].Image, ":v8.5.1"), "image of %s: %s", key, pod.Spec.Containers[0].Image)
	}
	assert.Equal(t, fc.Status.Replicas, fc.Status.UpdatedReplicas)
	for _, cs := range fc.Status.Components {
		assert.Equal(t, v1alpha1.RolloutDone, cs.Rollout, "rollout of %s", cs.Name)
		assert.Equal(t, cs.Replicas, cs.UpdatedReplicas, "updated pods of %s", cs.Name)
		for _, ps := range cs.Members {
			assert.Equal(t, ps.UpdateRevision, ps.CurrentRevision, "%s/%s", cs.Name, ps.Member)
		}
	}
	s.finish(windowRollout)
}

// TestScenario03EnvOfOnePlacement changes the env of one placement (pd in
// the first member): only that placement's pods roll, highest ordinal
// first.
func TestScenario03EnvOfOnePlacement(t *testing.T) {
	s := begin(t, "3 env of one placement", "env")
	fc0, _ := s.createSample()
	before := s.livePods(t)
	revisions := map[string]string{}
	for _, cs := range fc0.Status.Components {
		for _, ps := range cs.Members {
			revisions[cs.Name+"/"+ps.Member] = ps.UpdateRevision
		}
	}
	a := suite.memberA
	order := []string{a + "/" + s.name + "-pd-1", a + "/" + s.name + "-pd-0"}
	setting := corev1.EnvVar{Name: "PD_ROLE", Value: "voter"}

	s.update(func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[0].Topology[0].Env = []corev1.EnvVar{setting}
	})
	fc := s.settle()

	r := s.waitDeletions(len(order))
	assert.Equal(t, order, r.DeletionOrder(), "deletion order")
	s.assertOneAtATime(r)
	s.assertReplaced(before, order)
	for key, pod := range s.livePods(t) {
		if slices.Contains(order, key) {
			assert.Contains(t, pod.Spec.Containers[0].Env, setting, "env of %s", key)
		} else {
			assert.NotContains(t, pod.Spec.Containers[0].Env, setting, "env of %s", key)
		}
	}
	for _, cs := range fc.Status.Components {
		for _, ps := range cs.Members {
			if cs.Name == "pd" && ps.Member == a {
				assert.NotEqual(t, revisions[cs.Name+"/"+ps.Member], ps.UpdateRevision, "revision of %s/%s", cs.Name, ps.Member)
			} else {
				assert.Equal(t, revisions[cs.Name+"/"+ps.Member], ps.UpdateRevision, "revision of %s/%s", cs.Name, ps.Member)
			}
		}
	}
	s.finish(windowRollout)
}

// TestScenario04Scale scales in (surplus pods go highest ordinal first, one
// at a time, and no placement drops below its replicas) and out (new pods
// take new ordinals of their component, never one handed out before).
func TestScenario04Scale(t *testing.T) {
	s := begin(t, "4 scale in and out", "scale")
	s.createSample()
	a, b, n := suite.memberA, suite.memberB, s.name
	before := s.livePods(t)
	claimUID := func(name string) types.UID {
		var pvc corev1.PersistentVolumeClaim
		require.NoError(t, s.memberClient(a).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: federation.ClaimName("data", name)}, &pvc))
		return pvc.UID
	}
	claims := map[string]types.UID{}
	for _, pod := range []string{n + "-tikv-0", n + "-tikv-1"} {
		claims[pod] = claimUID(pod)
	}

	// In: pd in a 2 -> 1, tikv in a 2 -> 0.
	s.update(func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[0].Topology[0].Replicas = 1
		fc.Spec.Components[1].Topology[0].Replicas = 0
	})
	s.settle()
	removed := []string{a + "/" + n + "-pd-1", a + "/" + n + "-tikv-1", a + "/" + n + "-tikv-0"}
	r := s.waitDeletions(len(removed))
	assert.Equal(t, removed, r.DeletionOrder(), "scale-in order")
	s.assertOneAtATime(r)
	assert.Zero(t, r.MaxUnavailable, "a scale-in took a placement below its replicas")
	for key, pod := range s.livePods(t) {
		assert.Equal(t, before[key].UID, pod.UID, "%s was replaced", key)
	}
	tikvService := client.ObjectKey{Namespace: s.ns, Name: n + "-tikv"}
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		err := s.memberClient(a).Get(t.Context(), tikvService, &corev1.Service{})
		assert.True(c, apierrors.IsNotFound(err), "Service %s in %s, which hosts no tikv pod any more: %v", tikvService.Name, a, err)
	}, waitTimeout, poll)
	assert.NoError(t, s.memberClient(b).Get(t.Context(), tikvService, &corev1.Service{}), "Service %s in %s", tikvService.Name, b)

	// Out, one pod per change: the checker counts a desired pod that does
	// not exist yet as unavailable, so adding one at a time keeps that gap
	// to one pod.
	for _, step := range []struct {
		component, placement int
		replicas             int32
		want                 string
	}{
		// An ordinal is never handed out twice (a member out of sight may
		// still hold it): pd has used 0 to 2, so its new pod is 3 although
		// 1 is free. The exception is a retained claim: the sample keeps
		// tikv's claims on scale-in (whenScaled: Retain), so tikv in a gets
		// its pods back under their names, with their claims, lowest
		// first, as a StatefulSet would.
		{0, 1, 2, b + "/" + n + "-pd-3"},
		{1, 0, 1, a + "/" + n + "-tikv-0"},
		{1, 0, 2, a + "/" + n + "-tikv-1"},
	} {
		existing := s.livePods(t)
		s.update(func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[step.component].Topology[step.placement].Replicas = step.replicas
		})
		s.settle()
		var added []string
		for key := range s.livePods(t) {
			if _, ok := existing[key]; !ok {
				added = append(added, key)
			}
		}
		assert.Equal(t, []string{step.want}, added, "pods added")
	}
	for pod, uid := range claims {
		assert.Equal(t, uid, claimUID(pod), "%s came back with another claim", pod)
	}
	assert.NoError(t, s.memberClient(a).Get(t.Context(), tikvService, &corev1.Service{}), "Service %s is back in %s", tikvService.Name, a)
	assert.Equal(t, removed, s.checker.Report().DeletionOrder(), "no deletion on the way out")
	s.finish(windowRollout)
}

// TestScenario05KillManager kills the manager with SIGKILL at random
// moments during an upgrade, ten times, starting it again each time: the
// upgrade completes, one pod at a time, and the invariant holds throughout.
func TestScenario05KillManager(t *testing.T) {
	s := begin(t, "5 SIGKILL the manager x10", "kill")
	s.createSample()
	mgr := suite.provider.Manager
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("random seed %d", seed)

	upgrades := 1
	tag := func() string { return fmt.Sprintf("v8.5.%d", upgrades) }
	// inProgress reports, from the members, whether the current upgrade
	// is under way: a pod missing, not Ready, or not at the current image.
	inProgress := func() bool {
		pods := s.livePods(t)
		if len(pods) < len(s.samplePods()) {
			return true
		}
		for _, p := range pods {
			if !podwatch.Ready(&p) || p.DeletionTimestamp != nil || !strings.HasSuffix(p.Spec.Containers[0].Image, ":"+tag()) {
				return true
			}
		}
		return false
	}

	s.setImages(tag())
	for kills := 0; kills < 10; {
		if !inProgress() {
			// Ten kills outlasted this upgrade: start another, so that
			// every kill lands in one.
			upgrades++
			s.setImages(tag())
			continue
		}
		// The random moment: within 3s of the manager's start, while a
		// step takes about 2s, so kills land in every phase of a step
		// (before its deletion, between deletion and creation, while the
		// replacement starts, during minReadySeconds).
		time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Second))))
		if !inProgress() {
			continue
		}
		id, _, err := mgr.Running(t.Context())
		require.NoError(t, err)
		require.NoError(t, mgr.Kill(t.Context()))
		kills++
		t.Logf("kill %d: SIGKILL fedop-manager %s during upgrade %d, after %d deletions", kills, id, upgrades, len(s.checker.Report().Deletions))
		require.NoError(t, mgr.Start(t.Context()), "starting fedop-manager after kill %d", kills)
	}
	s.settle()

	// Each upgrade started once the previous one was over, so each went
	// through the whole order: a manager started after a kill resumed
	// where the killed one stopped (status.operation), neither skipping a
	// pod nor repeating one.
	var order []string
	for range upgrades {
		order = append(order, s.sampleUpgradeOrder()...)
	}
	r := s.waitDeletions(len(order))
	assert.Equal(t, order, r.DeletionOrder(), "deletion order over %d upgrades", upgrades)
	s.assertOneAtATime(r)
	t.Logf("%d upgrades under 10 kills", upgrades)
	s.finish(windowFaults)
}

// TestScenario06MemberDown takes a member's API server down mid-upgrade: no
// pod is deleted anywhere while it is down and MembersConnected=False names
// it; once it is back the upgrade resumes and completes.
func TestScenario06MemberDown(t *testing.T) {
	s := begin(t, "6 member down mid-upgrade", "down")
	s.createSample()
	a, b := suite.memberA, suite.memberB
	before := s.livePods(t)
	order := s.sampleUpgradeOrder()
	first := order[0] // a/down-pd-1

	// Hold the first step: its replacement cannot be scheduled while zone a
	// of a is cordoned, so b goes down while the upgrade is known to be at
	// that step and no deletion in b can be on its way.
	s.cordon(a, "a")
	s.setImages("v8.5.1")
	require.Equal(t, order[:1], s.waitDeletions(1).DeletionOrder())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod, ok := s.livePodsIn(c, a)[first]
		require.True(c, ok, "%s was not recreated", first)
		assert.NotEqual(c, before[first].UID, pod.UID)
	}, waitTimeout, poll, "the first replacement was not created")

	s.down(b)
	fc := s.waitCondition(v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected, names([]string{b}, a))
	assertCondition(t, fc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected)
	for _, ms := range fc.Status.Members {
		assert.Equal(t, ms.Name == a, ms.Connected, "connected: member %s", ms.Name)
	}

	// Release the first step. fedop sees its replacement available; the
	// next step would delete a pod of b.
	s.uncordon(a, "a")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod := s.livePodsIn(c, a)[first]
		assert.True(c, podwatch.Ready(&pod), "%s is not Ready", first)
		fc := s.get(c)
		require.NotNil(c, fc.Status.Operation)
		assert.Empty(c, fc.Status.Operation.Pod, "the first step is not complete")
		assertCondition(c, fc, v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonMemberDisconnected)
		assert.Contains(c, conditionMessage(fc, v1alpha1.ConditionProgressing), b, "what the next step waits for")
	}, waitTimeout, poll, "fedop did not observe the first step complete")

	// A bounded negative check: the property is that nothing is deleted
	// while b is down, and fedop has just shown (above) that it has
	// evaluated the very state in which it would otherwise take the next
	// step. What the window guards against is a later reconcile acting
	// anyway (a probe tick, a resync, a requeue); with a 1s probe period,
	// 5s covers several of each. The checker covers a; in b nothing can be
	// deleted while its API server is stopped, and status.operation.pod,
	// which fedop writes before any deletion (acknowledge, then act),
	// shows that none was attempted.
	assert.Never(t, func() bool {
		fc := s.get(t)
		return len(s.checker.Report().Deletions) > 1 || fc.Status.Operation == nil || fc.Status.Operation.Pod != ""
	}, 5*time.Second, poll, "a pod deletion was taken or acknowledged while %s was down", b)
	assert.Equal(t, order[:1], s.checker.Report().DeletionOrder())

	s.up(b)
	s.settle()
	r := s.waitDeletions(len(order))
	assert.Equal(t, order, r.DeletionOrder(), "deletion order")
	s.assertOneAtATime(r)
	s.assertReplaced(before, order)
	s.finish(windowFaults)
}

// conditionMessage returns the message of fc's condition typ ("" without
// it).
func conditionMessage(fc *v1alpha1.FederationCluster, typ string) string {
	for _, c := range fc.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// TestScenario07RotateCredentials re-registers a member mid-upgrade with
// --revoke-old-tokens, which makes the credentials fedop was using invalid:
// the rollout goes on, on the new credentials, without the manager being
// restarted.
func TestScenario07RotateCredentials(t *testing.T) {
	s := begin(t, "7 rotate credentials mid-upgrade", "rotate")
	s.createSample()
	b := suite.memberB
	before := s.livePods(t)
	order := s.sampleUpgradeOrder()

	// Hold the second step (b's pd): its replacement stays Pending while
	// the credentials rotate, so that the steps after it, two of them in
	// b, certainly run on the new credentials.
	s.cordon(b, "b")
	secretKey := client.ObjectKey{Namespace: member.DefaultNamespace, Name: b}
	var old corev1.Secret
	require.NoError(t, suite.host.Get(t.Context(), secretKey, &old))

	s.setImages("v8.5.1")
	require.Equal(t, order[:2], s.waitDeletions(2).DeletionOrder())
	require.NoError(t, suite.provider.Registrar.Register(t.Context(), b, b, RegisterOptions{RevokeOldTokens: true}), "re-registering %s", b)
	rotated := time.Now()
	t.Logf("re-registered %s with --revoke-old-tokens after %v", b, s.checker.Report().DeletionOrder())

	// The credentials fedop had are dead, and the Secret holds new ones.
	oldConfig, err := clientcmd.RESTConfigFromKubeConfig(old.Data[member.KubeconfigKey])
	require.NoError(t, err)
	// The Secret names the API server as the manager reaches it, which on
	// kind is an address inside the kind network; the suite reaches the
	// same server, with the same certificate, at its own address.
	oldConfig.Host = suite.memberConfigs[b].Host
	oldClient, err := client.New(oldConfig, client.Options{Scheme: Scheme})
	require.NoError(t, err)
	// kube-apiserver caches a token's successful authentication for 10s
	// (its built-in TokenSuccessCacheTTL), and fedop used this one a moment
	// ago: it dies within that.
	require.Eventually(t, func() bool {
		err := oldClient.List(t.Context(), &corev1.PodList{}, client.InNamespace(s.ns))
		return apierrors.IsUnauthorized(err)
	}, 30*time.Second, poll, "the old token still works")
	t.Logf("the old token of %s is rejected", b)
	var current corev1.Secret
	require.NoError(t, suite.host.Get(t.Context(), secretKey, &current))
	assert.NotEqual(t, old.Data[member.KubeconfigKey], current.Data[member.KubeconfigKey], "the Secret was not rewritten")

	s.uncordon(b, "b")
	s.settle()
	r := s.waitDeletions(len(order))
	assert.Equal(t, order, r.DeletionOrder(), "deletion order")
	s.assertOneAtATime(r)
	s.assertReplaced(before, order)
	var afterRotation []string
	for _, d := range r.Deletions {
		if d.Member == b && d.At.After(rotated) {
			afterRotation = append(afterRotation, d.String())
		}
	}
	assert.NotEmpty(t, afterRotation, "no pod of %s was replaced on the new credentials", b)
	id, running, err := suite.provider.Manager.Running(t.Context())
	require.NoError(t, err)
	assert.True(t, running, "fedop-manager is not running")
	assert.Equal(t, s.managerID, id, "fedop-manager was restarted")
	s.finish(windowFaults)
}

// TestScenario08BadInput feeds fedop bad input, none of which may crash the
// manager or delete anything: a Secret with a malformed kubeconfig, one
// with an exec plugin (refused, with an event), a FederationCluster with
// duplicate components (rejected by the API server), and a topology naming
// a member with no Secret (MemberNotFound, then it proceeds once that
// member is registered).
func TestScenario08BadInput(t *testing.T) {
	s := begin(t, "8 bad input", "bad")
	a, b := suite.memberA, suite.memberB
	// The member without a Secret, registered later as a second name for b.
	alias := b + "-alias"
	s.clusters = map[string]string{a: a, alias: b}
	s.watch()
	secretName := func(what string) string { return "e2e-" + suite.runID + "-" + what }
	addSecret := func(name string, kubeconfig []byte) {
		t.Helper()
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: name, Labels: map[string]string{member.LabelMemberCluster: "true"}},
			Data:       map[string][]byte{member.KubeconfigKey: kubeconfig},
		}
		require.NoError(t, suite.host.Create(t.Context(), secret))
		t.Cleanup(func() {
			ctx, cancel := cleanupContext()
			defer cancel()
			if err := client.IgnoreNotFound(suite.host.Delete(ctx, secret)); err != nil {
				t.Errorf("deleting Secret %s: %v", name, err)
			}
		})
	}

	// A malformed kubeconfig.
	malformed := secretName("malformed")
	addSecret(malformed, []byte("apiVersion: v1\nkind: Config\nclusters: {this is: [not, a kubeconfig"))
	t.Logf("Secret %s: %s", malformed, warningEvent(t, malformed, member.ReasonInvalidKubeconfig))

	// An exec plugin that would leave a mark if it ever ran.
	execSecret := secretName("exec")
	marker := filepath.Join(t.TempDir(), "exec-plugin-ran")
	addSecret(execSecret, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: x
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: x
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "touch %s"]
      interactiveMode: Never
contexts:
- name: x
  context: {cluster: x, user: x}
current-context: x
`, marker))
	t.Logf("Secret %s: %s", execSecret, warningEvent(t, execSecret, member.ReasonKubeconfigRefused))
	assert.NoFileExists(t, marker, "the exec plugin ran")

	// Duplicate components: rejected at admission.
	dup := s.sample()
	dup.Name = "bad-duplicate"
	dup.Spec.Components[1].Name = dup.Spec.Components[0].Name
	err := suite.host.Create(t.Context(), dup)
	require.Error(t, err, "a FederationCluster with duplicate components was accepted")
	assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
	t.Logf("duplicate components: %v", err)
	assert.True(t, apierrors.IsNotFound(suite.host.Get(t.Context(), client.ObjectKeyFromObject(dup), &v1alpha1.FederationCluster{})))

	// A topology naming a member with no Secret. The alias Secret goes
	// when the test ends, after the FederationCluster (cleanups run last
	// registered first), whose cleanup needs it.
	t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: alias}}
		if err := client.IgnoreNotFound(suite.host.Delete(ctx, secret)); err != nil {
			t.Errorf("deleting Secret %s: %v", alias, err)
		}
	})
	fc := s.sample()
	for i := range fc.Spec.Components {
		fc.Spec.Components[i].Topology[1].Member = alias
	}
	s.create(fc)
	s.waitCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMemberNotFound, names([]string{alias}))
	s.waitCondition(v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberNotFound, names([]string{alias}, a))
	for key := range s.livePods(t) {
		assert.False(t, strings.HasPrefix(key, alias+"/"), "pod %s created for a member with no Secret", key)
	}
	require.NoError(t, suite.provider.Registrar.Register(t.Context(), alias, b, RegisterOptions{}), "registering %s as %s", b, alias)
	s.settle()
	var inAlias []string
	for key := range s.livePods(t) {
		if strings.HasPrefix(key, alias+"/") {
			inAlias = append(inAlias, strings.TrimPrefix(key, alias+"/"))
		}
	}
	assert.ElementsMatch(t, []string{s.name + "-pd-2", s.name + "-tikv-2", s.name + "-tidb-1"}, inAlias, "pods of %s (in %s)", alias, b)

	assert.Empty(t, s.checker.Report().Deletions, "pods were deleted")
	id, running, err := suite.provider.Manager.Running(t.Context())
	require.NoError(t, err)
	assert.True(t, running, "fedop-manager is not running")
	assert.Equal(t, s.managerID, id, "fedop-manager was restarted")
	// Creation is not disruption: the window starts once it is settled.
	s.checker.Reset()
	s.finish(windowFaults)
}

// TestScenario09Delete deletes FederationClusters: with every member up,
// every member is cleaned and only fedop's objects go; with a member down,
// the finalizer stays and CleanedUp=False names the member, until the
// object is annotated fedop.io/skip-unreachable-cleanup: "true". The suite
// then removes what was left in that member.
func TestScenario09Delete(t *testing.T) {
	a, b := suite.memberA, suite.memberB

	s := begin(t, "9 delete", "delete")
	s.createSample()
	s.checker.Expect(nil)
	require.NoError(t, suite.host.Delete(t.Context(), s.get(t)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(suite.host.Get(t.Context(), s.key, &v1alpha1.FederationCluster{}))
	}, waitTimeout, poll, "the FederationCluster was not deleted")
	// The finalizer went only once every member was clean: what is left
	// in the namespace is the decoys.
	for _, m := range []string{a, b} {
		assert.ElementsMatch(t, []string{s.name + "-pd-0-decoy", s.name + "-pd-99"}, objectNames(t, m, s.ns, &corev1.PodList{}), "pods left in %s", m)
		assert.ElementsMatch(t, []string{s.name + "-decoy"}, objectNames(t, m, s.ns, &corev1.ServiceList{}), "Services left in %s", m)
	}
	r := s.waitDeletions(len(s.samplePods()))
	assert.ElementsMatch(t, s.samplePods(), r.DeletionOrder())
	s.finish(windowTeardown)

	s2 := begin(t, "9 delete with a member down", "delete-down")
	s2.createSample()
	s2.down(b)
	s2.waitCondition(v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected, names([]string{b}, a))
	s2.checker.Expect(nil)
	require.NoError(t, suite.host.Delete(t.Context(), s2.get(t)))
	fc := s2.waitCondition(v1alpha1.ConditionCleanedUp, metav1.ConditionFalse, v1alpha1.ReasonMemberUnreachable,
		names([]string{b, v1alpha1.AnnotationSkipUnreachableCleanup}, a))
	assert.Contains(t, fc.Finalizers, v1alpha1.Finalizer)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, s2.livePodsIn(c, a), "fedop's pods left in %s", a)
	}, waitTimeout, poll, "%s was not cleaned", a)
	// Bounded, like scenario 6's: fedop has written CleanedUp=False, so it
	// has evaluated this state; the window guards against a later reconcile
	// dropping the finalizer anyway.
	assert.Never(t, func() bool {
		return apierrors.IsNotFound(suite.host.Get(t.Context(), s2.key, &v1alpha1.FederationCluster{}))
	}, 3*time.Second, poll, "the FederationCluster went while %s was down", b)

	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.AnnotationSkipUnreachableCleanup)
	require.NoError(t, suite.host.Patch(t.Context(), s2.get(t), client.RawPatch(types.MergePatchType, patch)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(suite.host.Get(t.Context(), s2.key, &v1alpha1.FederationCluster{}))
	}, waitTimeout, poll, "the FederationCluster was not deleted with %s", v1alpha1.AnnotationSkipUnreachableCleanup)

	// b comes back with fedop's objects still in it, as the annotation
	// said; the suite removes them.
	s2.up(b)
	left := s2.livePods(t)
	assert.ElementsMatch(t, []string{b + "/" + s2.name + "-pd-2", b + "/" + s2.name + "-tikv-2", b + "/" + s2.name + "-tidb-1"},
		slices.Collect(maps.Keys(left)), "pods left in %s", b)
	s2.finish(windowTeardown)
	owned := client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: s2.name}
	mc := suite.members[b]
	require.NoError(t, mc.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(s2.ns), owned))
	var svcs corev1.ServiceList
	require.NoError(t, mc.List(t.Context(), &svcs, client.InNamespace(s2.ns), owned))
	for i := range svcs.Items {
		require.NoError(t, client.IgnoreNotFound(mc.Delete(t.Context(), &svcs.Items[i])))
	}
	require.Eventually(t, func() bool { return len(s2.livePods(t)) == 0 }, waitTimeout, poll, "the leftover pods in %s did not go", b)
}

// objectNames lists the names of the objects of list's kind in namespace ns
// of member m.
func objectNames(t *testing.T, m, ns string, list client.ObjectList) []string {
	t.Helper()
	require.NoError(t, suite.members[m].List(t.Context(), list, client.InNamespace(ns)))
	var out []string
	switch l := list.(type) {
	case *corev1.PodList:
		for _, o := range l.Items {
			out = append(out, o.Name)
		}
	case *corev1.ServiceList:
		for _, o := range l.Items {
			out = append(out, o.Name)
		}
	}
	return out
}

// TestScenario10Decoys checks, after every other scenario, the decoys
// created in every scenario's namespace in every member before the first:
// pods named like fedop's (<fc>-pd-0-decoy, and <fc>-pd-99 with every
// fedop label but managed-by) and a Service. fedop never touched them:
// same instance, not being deleted, labels unchanged, no field of fedop's
// (every scenario checks this when it ends too). And fedop left no pod of
// its own behind in any of those namespaces.
func TestScenario10Decoys(t *testing.T) {
	checkDecoys(t)
	t.Logf("%d decoys untouched", len(suite.decoys))
	for _, name := range fcNames {
		for _, m := range suite.cfg.Members {
			var pods corev1.PodList
			require.NoError(t, suite.members[m.Name].List(t.Context(), &pods, client.InNamespace(namespaceOf(name)),
				client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}))
			var left []string
			for _, p := range pods.Items {
				left = append(left, p.Name)
			}
			assert.Empty(t, left, "fedop's pods left in %s/%s", m.Name, namespaceOf(name))
		}
	}
}
