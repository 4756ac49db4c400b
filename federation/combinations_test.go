package federation_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
)

// Tests of combinations users make in one apply, or while the previous
// change still rolls: scale and upgrade together, and random sequences of
// both.

// statusWatch watches one FederationCluster on the host with an informer of
// its own and records every status written that contradicts itself:
// Progressing Complete while a component's rollout is not Done or a desired
// pod is not at its update revision.
type statusWatch struct {
	mu         sync.Mutex
	seen       int
	violations []string
}

func watchStatus(t *testing.T, s *scenario) *statusWatch {
	t.Helper()
	w := &statusWatch{}
	c, err := cache.New(s.env.Host.Config, cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{s.ns: {}},
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.FederationCluster{}: {Field: fields.OneTermEqualSelector("metadata.name", s.key.Name)},
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	inf, err := c.GetInformer(ctx, &v1alpha1.FederationCluster{})
	require.NoError(t, err)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.check(obj) },
		UpdateFunc: func(_, obj any) { w.check(obj) },
	})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.True(t, c.WaitForCacheSync(ctx))
	return w
}

func (w *statusWatch) check(obj any) {
	fc, ok := obj.(*v1alpha1.FederationCluster)
	if !ok {
		return
	}
	st := fc.Status
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen++
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
	if c == nil || c.Reason != v1alpha1.ReasonComplete {
		return
	}
	bad := st.UpdatedReplicas != st.Replicas || st.Operation != nil
	for _, cs := range st.Components {
		bad = bad || cs.Rollout != v1alpha1.RolloutDone
	}
	if bad {
		w.violations = append(w.violations, fmt.Sprintf("resourceVersion %s: Progressing Complete with %d of %d pods updated, operation %v, components %+v",
			fc.ResourceVersion, st.UpdatedReplicas, st.Replicas, st.Operation, st.Components))
	}
}

func (w *statusWatch) assertConsistent(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Positive(t, w.seen, "the watch saw no status")
	assert.Empty(t, w.violations, "statuses that contradict themselves")
}

// twoComponentFC is alpha (k8s-a 3, k8s-b 2) and beta (k8s-b 2, k8s-a 1),
// both at image x:1.
func twoComponentFC(ns string) *v1alpha1.FederationCluster {
	return &v1alpha1.FederationCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName},
		Spec: v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{
			component("alpha", "example.com/x:1", 8080, placement(memberA, 3, "a"), placement(memberB, 2, "b")),
			component("beta", "example.com/x:1", 8080, placement(memberB, 2, "b"), placement(memberA, 1, "a")),
		}},
	}
}

// startScenario is initialized with fc instead of the sample.
func startScenario(t *testing.T, base string, fc func(ns string) *v1alpha1.FederationCluster) *scenario {
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
	obj := fc(ns)
	s.checker.setDesired(obj)
	createFC(t, env, obj)
	requireSettled(t, env, s.key)
	return s
}

// TestScaleOutScaleInAndUpgradeInOneApply is the Stall issue's sequence: one
// update scales alpha to k8s-a 2, k8s-b 4 and beta to k8s-b 1, k8s-a 2, and
// moves both to image x:2. The scale runs first (new pods at x:2), then the
// upgrade replaces every outdated pod, with nothing but the watches of
// members waking fedop; no status on the way claims Complete with outdated
// pods.
func TestScaleOutScaleInAndUpgradeInOneApply(t *testing.T) {
	s := startScenario(t, "stall", twoComponentFC)
	w := watchStatus(t, s)
	require.ElementsMatch(t, []string{
		"k8s-a/demo-alpha-0", "k8s-a/demo-alpha-1", "k8s-a/demo-alpha-2", "k8s-b/demo-alpha-3", "k8s-b/demo-alpha-4",
		"k8s-b/demo-beta-0", "k8s-b/demo-beta-1", "k8s-a/demo-beta-2",
	}, slices.Collect(maps.Keys(memberPods(t, s.env, s.ns))))
	s.checker.reset()

	edit := func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[0].Topology[0].Replicas = 2
		fc.Spec.Components[0].Topology[1].Replicas = 4
		fc.Spec.Components[1].Topology[0].Replicas = 1
		fc.Spec.Components[1].Topology[1].Replicas = 2
		setImages("2")(fc)
	}
	want := getFC(t, s.env, s.key)
	edit(want)
	s.checker.setDesired(want)
	updateFC(t, s.env, s.key, edit)
	fc := requireSettled(t, s.env, s.key)

	after := memberPods(t, s.env, s.ns)
	assert.ElementsMatch(t, []string{
		"k8s-a/demo-alpha-0", "k8s-a/demo-alpha-1", "k8s-b/demo-alpha-3", "k8s-b/demo-alpha-4", "k8s-b/demo-alpha-5", "k8s-b/demo-alpha-6",
		"k8s-b/demo-beta-0", "k8s-a/demo-beta-2", "k8s-a/demo-beta-3",
	}, slices.Collect(maps.Keys(after)), "pods keep their names and members; new ones take new ordinals")
	for key, pod := range after {
		assert.Equal(t, "example.com/x:2", pod.Spec.Containers[0].Image, "image of %s", key)
		assert.Equal(t, expectedRevision(t, fc, pod), pod.Labels[v1alpha1.LabelRevision], "revision of %s", key)
	}
	r := s.checker.report()
	// Two removed by the scale-in, six replaced by the upgrade.
	assert.Len(t, r.deletions, 8, "deletions: %v", r.deletions)
	assert.Equal(t, make([]int, len(r.deletions)), r.unavailableAtDeletion, "pods unavailable when each deletion was issued")
	w.assertConsistent(t)
	s.decoys.assertUntouched(t)
}

// TestRandomChangesWhileRolling applies seeded random changes (replicas per
// placement, the image, or both), each a moment after the previous one,
// often while it still rolls. The federation must reach the last spec with
// no outside event, pod names unique and stable, and no status claiming
// Complete with outdated pods.
func TestRandomChangesWhileRolling(t *testing.T) {
	s := startScenario(t, "random", twoComponentFC)
	w := watchStatus(t, s)
	rng := rand.New(rand.NewPCG(20, 26))
	image := 1
	for round := range 3 {
		for range 1 + rng.IntN(2) {
			scale, upgrade := rng.IntN(3) != 1, rng.IntN(3) != 0
			if !scale && !upgrade {
				scale = true
			}
			if upgrade {
				image++
			}
			replicas := [2][2]int32{{int32(rng.IntN(4)), int32(rng.IntN(4))}, {int32(rng.IntN(4)), int32(rng.IntN(4))}}
			t.Logf("round %d: scale %v %v, image x:%d", round, scale, replicas, image)
			edit := func(fc *v1alpha1.FederationCluster) {
				if scale {
					for c := range 2 {
						for p := range 2 {
							fc.Spec.Components[c].Topology[p].Replicas = replicas[c][p]
						}
					}
				}
				setImages(fmt.Sprint(image))(fc)
			}
			want := getFC(t, s.env, s.key)
			edit(want)
			s.checker.setDesired(want)
			gen := updateFC(t, s.env, s.key, edit).Generation
			// The next change lands while this one rolls: wait only until
			// fedop has observed this one.
			require.Eventually(t, func() bool { return getFC(t, s.env, s.key).Status.ObservedGeneration >= gen }, wait, tick)
		}
		fc := requireSettled(t, s.env, s.key)
		pods := memberPods(t, s.env, s.ns)
		names := map[string]string{}
		for key, pod := range pods {
			if other, ok := names[pod.Name]; ok {
				t.Errorf("pod %s exists in two members: %s and %s", pod.Name, other, key)
			}
			names[pod.Name] = key
			assert.Equal(t, fmt.Sprintf("example.com/x:%d", image), pod.Spec.Containers[0].Image, "image of %s", key)
			assert.Equal(t, expectedRevision(t, fc, pod), pod.Labels[v1alpha1.LabelRevision], "revision of %s", key)
		}
		assert.EqualValues(t, total(fc), len(pods), "pods after round %d", round)
	}
	w.assertConsistent(t)
	s.decoys.assertUntouched(t)
}

// TestPodNameTakenIsNotAdopted: a pod that someone else created with the
// name of a pod fedop is about to add is left alone: not adopted, not
// written, reported in a Warning Event and in Progressing; once it is gone,
// fedop creates its own.
func TestPodNameTakenIsNotAdopted(t *testing.T) {
	s := initialized(t, "taken")
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: fcName + "-pd-3", Labels: map[string]string{"app": "someone-else"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/other:1"}}},
	}
	b := s.env.Member(memberB).Client
	require.NoError(t, b.Create(context.Background(), foreign))

	// pd in k8s-b: 1 -> 2; the new pod takes ordinal 3.
	want := getFC(t, s.env, s.key)
	want.Spec.Components[0].Topology[1].Replicas = 2
	s.checker.setDesired(want)
	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) { fc.Spec.Components[0].Topology[1].Replicas = 2 })

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		fc := getFC(c, s.env, s.key)
		cond := meta.FindStatusCondition(fc.Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(c, cond)
		assert.Equal(c, v1alpha1.ReasonPodNameTaken, cond.Reason)
		assert.Contains(c, cond.Message, "pod "+fcName+"-pd-3 in member "+memberB)
	}, wait, tick, "Progressing does not report the taken name")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var list eventsv1.EventList
		require.NoError(c, s.env.Host.Client.List(context.Background(), &list, client.InNamespace(s.ns)))
		found := false
		for _, e := range list.Items {
			found = found || (e.Reason == federation.EventPodNameTaken && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, fcName+"-pd-3"))
		}
		assert.True(c, found, "no Warning Event %s", federation.EventPodNameTaken)
	}, wait, tick)

	var got corev1.Pod
	require.NoError(t, b.Get(context.Background(), client.ObjectKeyFromObject(foreign), &got))
	assert.Equal(t, foreign.UID, got.UID, "the foreign pod was replaced")
	assert.Equal(t, map[string]string{"app": "someone-else"}, got.Labels, "the foreign pod was relabelled")
	for _, mf := range got.ManagedFields {
		assert.NotEqual(t, v1alpha1.FieldManager, mf.Manager, "fedop wrote to the foreign pod")
	}

	require.NoError(t, b.Delete(context.Background(), &got, client.GracePeriodSeconds(0)))
	fc := requireSettled(t, s.env, s.key)
	pod := memberPods(t, s.env, s.ns)[memberB+"/"+fcName+"-pd-3"]
	assert.Equal(t, expectedRevision(t, fc, pod), pod.Labels[v1alpha1.LabelRevision], "fedop's own pod took the name")
	s.decoys.assertUntouched(t)
}
