package federation_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
)

// Integration tests of the Storage issue: per-pod claims, kept across
// replacements, deleted or kept as the retention policy says, grown in
// place one pod at a time.

// storageClasses are created in every member once: "standard" allows
// expansion, "fixed" does not.
var storageClasses sync.Once

func ensureStorageClasses(t *testing.T, s *scenario) {
	t.Helper()
	storageClasses.Do(func() {
		for _, m := range s.env.Members {
			for name, expand := range map[string]bool{"standard": true, "fixed": false} {
				sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "test.fedop.io/none", AllowVolumeExpansion: ptr.To(expand)}
				if err := m.Client.Create(context.Background(), sc); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatalf("StorageClass %s in %s: %v", name, m.Name, err)
				}
			}
		}
	})
}

// claimFC is one component "db" (k8s-a 2, k8s-b 1) with a claim template
// "data" of 1Gi in class standard, with the retention policy given.
func claimFC(policy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy) func(ns string) *v1alpha1.FederationCluster {
	const size, class = "1Gi", "standard"
	return func(ns string) *v1alpha1.FederationCluster {
		c := component("db", "example.com/db:1", 5432, placement(memberA, 2, "a"), placement(memberB, 1, "b"))
		c.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		c.VolumeClaimTemplates = []v1alpha1.VolumeClaimTemplate{{
			Metadata: v1alpha1.ClaimMetadata{Name: "data", Labels: map[string]string{"example.com/tier": "data"}},
			Spec: v1alpha1.ClaimSpec{
				AccessModes:      []string{"ReadWriteOnce"},
				StorageClassName: ptr.To(class),
				Resources:        v1alpha1.ClaimResources{Requests: v1alpha1.ClaimRequests{Storage: size}},
			},
		}}
		c.PersistentVolumeClaimRetentionPolicy = policy
		return &v1alpha1.FederationCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName},
			Spec:       v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{c}},
		}
	}
}

// memberClaims returns the claims in ns of every member, by member/name,
// leaving out those being deleted: envtest runs no kube-controller-manager,
// so the pvc-protection finalizer is never removed, and a deleted claim
// stays, terminating, forever.
func memberClaims(t require.TestingT, s *scenario) map[string]corev1.PersistentVolumeClaim {
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, m := range s.env.Members {
		var list corev1.PersistentVolumeClaimList
		require.NoError(t, m.Client.List(context.Background(), &list, client.InNamespace(s.ns)))
		for _, c := range list.Items {
			if c.DeletionTimestamp == nil {
				out[m.Name+"/"+c.Name] = c
			}
		}
	}
	return out
}

// resizer stands in for a member's volume expansion: it gives every claim
// of ns whose request exceeds its capacity that capacity after a delay,
// and records, per claim, when its request changed and when it was
// resized.
type resizer struct {
	mu      sync.Mutex
	asked   map[string]time.Time
	resized map[string]time.Time
}

func startResizer(t *testing.T, s *scenario) *resizer {
	r := &resizer{asked: map[string]time.Time{}, resized: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, m := range s.env.Members {
		wg.Go(func() {
			for ctx.Err() == nil {
				var list corev1.PersistentVolumeClaimList
				if err := m.Client.List(ctx, &list, client.InNamespace(s.ns)); err == nil {
					for i := range list.Items {
						c := &list.Items[i]
						want := c.Spec.Resources.Requests[corev1.ResourceStorage]
						have := c.Status.Capacity[corev1.ResourceStorage]
						key := m.Name + "/" + c.Name
						switch {
						case have.IsZero():
							// A new claim: bound at its size.
							c.Status.Phase = corev1.ClaimBound
							c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
							_ = m.Client.Status().Update(ctx, c)
						case want.Cmp(have) > 0:
							r.mu.Lock()
							if _, ok := r.asked[key]; !ok {
								r.asked[key] = time.Now()
							}
							due := time.Since(r.asked[key]) > 300*time.Millisecond
							r.mu.Unlock()
							if due {
								c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
								if m.Client.Status().Update(ctx, c) == nil {
									r.mu.Lock()
									r.resized[key] = time.Now()
									r.mu.Unlock()
								}
							}
						}
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	return r
}

// TestClaimsPerPod: every pod gets data-<pod> in its member, labelled like fedop's pods, in its placement's StorageClass,
// and mounted as volume data; a replaced pod mounts the same claim.
func TestClaimsPerPod(t *testing.T) {
	s := startScenario(t, "claims", func(ns string) *v1alpha1.FederationCluster {
		fc := claimFC(nil)(ns)
		fc.Spec.Components[0].Topology[1].StorageClassName = ptr.To("fixed")
		return fc
	})
	claims := memberClaims(t, s)
	pods := memberPods(t, s.env, s.ns)
	require.Len(t, claims, 3)
	for key, pod := range pods {
		m := strings.SplitN(key, "/", 2)[0]
		claim, ok := claims[m+"/data-"+pod.Name]
		require.True(t, ok, "no claim for %s", key)
		assert.Equal(t, map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fcName, v1alpha1.LabelComponent: "db",
			v1alpha1.LabelMember: m, v1alpha1.LabelPod: pod.Name, "example.com/tier": "data",
		}, claim.Labels, "labels of claim %s", claim.Name)
		wantClass := map[string]string{memberA: "standard", memberB: "fixed"}[m]
		assert.Equal(t, wantClass, ptr.Deref(claim.Spec.StorageClassName, ""), "class of %s", claim.Name)
		assert.Equal(t, resource.MustParse("1Gi"), claim.Spec.Resources.Requests[corev1.ResourceStorage])
		assert.Contains(t, pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + pod.Name},
		}})
	}

	// An upgrade replaces every pod; each replacement mounts its claim.
	updateFC(t, s.env, s.key, setImages("2"))
	requireSettled(t, s.env, s.key)
	after := memberClaims(t, s)
	for key, c := range claims {
		assert.Equal(t, c.UID, after[key].UID, "claim %s was replaced", key)
	}
	for key, pod := range memberPods(t, s.env, s.ns) {
		assert.NotEqual(t, pods[key].UID, pod.UID, "%s was not replaced", key)
	}
}

// TestClaimBeforePod: a pod is created only once its claims exist. A
// ValidatingAdmissionPolicy in k8s-b refuses every claim in the test's
// namespace; fedop says so and creates no pod in k8s-b until the policy
// goes.
func TestClaimBeforePod(t *testing.T) {
	env, k := federationEnv(t)
	ns := setupNamespace(t, env, "claimfirst")
	key := client.ObjectKey{Namespace: ns, Name: fcName}
	b := env.Member(memberB).Client
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-claims-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "the test refuses claims"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	require.NoError(t, b.Create(context.Background(), policy))
	require.NoError(t, b.Create(context.Background(), binding))
	// The API server enforces a policy once its informer has it: wait
	// until a dry-run claim is refused.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		probe := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		assert.True(c, apierrors.IsInvalid(b.Create(context.Background(), probe, client.DryRunAll)), "the policy is not enforced yet")
	}, time.Minute, 100*time.Millisecond)
	unbind := func() {
		_ = b.Delete(context.Background(), binding)
		_ = b.Delete(context.Background(), policy)
	}
	t.Cleanup(unbind)
	startChecker(t, env, k, ns)
	startFedop(t, env, ns+"-1")
	fc := claimFC(nil)(ns)
	ensureStorageClasses(t, &scenario{env: env})
	createFC(t, env, fc)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var got v1alpha1.FederationCluster
		require.NoError(c, env.Host.Client.Get(context.Background(), key, &got))
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(c, cond)
		assert.Equal(c, v1alpha1.ReasonMemberWriteFailed, cond.Reason)
		assert.Contains(c, cond.Message, "claim data-"+fcName+"-db-2 in member "+memberB)
	}, time.Minute, 100*time.Millisecond)
	for key := range memberPods(t, env, ns) {
		assert.False(t, strings.HasPrefix(key, memberB+"/"), "pod %s was created without its claim", key)
	}

	unbind()
	requireSettled(t, env, key)
	var claim corev1.PersistentVolumeClaim
	require.NoError(t, b.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data-" + fcName + "-db-2"}, &claim))
	assert.Contains(t, memberPods(t, env, ns), memberB+"/"+fcName+"-db-2")
}

// TestClaimRetentionWhenScaled: whenScaled Delete removes exactly the
// claims of pods a scale-in removed; Retain keeps them, and a scale-out of
// that member takes the ordinal back, so the new pod finds the claim. A
// claim fedop did not create is never deleted.
func TestClaimRetentionWhenScaled(t *testing.T) {
	policies := []appsv1.PersistentVolumeClaimRetentionPolicyType{
		appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			retention := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: policy, WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
			s := startScenario(t, "scaled-"+strings.ToLower(string(policy)), claimFC(retention))
			// Someone else's claim, named like the claim of a pod fedop
			// has not made: fedop must never delete it.
			foreign := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "data-" + fcName + "-db-9"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}
			require.NoError(t, s.env.Member(memberA).Client.Create(context.Background(), foreign))
			before := memberClaims(t, s)

			// k8s-a: 2 -> 1 removes demo-db-1.
			updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) { fc.Spec.Components[0].Topology[0].Replicas = 1 })
			requireSettled(t, s.env, s.key)
			removed := memberA + "/data-" + fcName + "-db-1"
			if policy == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				require.Eventually(t, func() bool { _, ok := memberClaims(t, s)[removed]; return !ok }, wait, tick, "%s was not deleted", removed)
			} else {
				assert.Never(t, func() bool { _, ok := memberClaims(t, s)[removed]; return !ok }, time.Second, tick, "%s was deleted", removed)
			}
			after := memberClaims(t, s)
			for key, c := range before {
				if key == removed {
					continue
				}
				assert.Equal(t, c.UID, after[key].UID, "claim %s", key)
			}

			// k8s-a: 1 -> 2 again.
			updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) { fc.Spec.Components[0].Topology[0].Replicas = 2 })
			requireSettled(t, s.env, s.key)
			pods := slices.Collect(maps.Keys(memberPods(t, s.env, s.ns)))
			if policy == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
				assert.Contains(t, pods, memberA+"/"+fcName+"-db-1", "the kept claim's ordinal was not taken back")
				assert.Equal(t, before[removed].UID, memberClaims(t, s)[removed].UID, "the new pod does not find its predecessor's claim")
			} else {
				assert.Contains(t, pods, memberA+"/"+fcName+"-db-3", "a new ordinal expected")
			}
			assert.Equal(t, foreign.UID, memberClaims(t, s)[memberA+"/"+foreign.Name].UID, "someone else's claim was deleted")
		})
	}
}

// TestClaimRetentionWhenDeleted: deleting the FederationCluster keeps every
// claim with whenDeleted Retain, and deletes fedop's with Delete.
func TestClaimRetentionWhenDeleted(t *testing.T) {
	policies := []appsv1.PersistentVolumeClaimRetentionPolicyType{
		appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			retention := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenDeleted: policy}
			s := startScenario(t, "deleted-"+strings.ToLower(string(policy)), claimFC(retention))
			before := memberClaims(t, s)
			require.Len(t, before, 3)
			require.NoError(t, s.env.Host.Client.Delete(context.Background(), getFC(t, s.env, s.key)))
			require.Eventually(t, func() bool {
				return apierrors.IsNotFound(s.env.Host.Client.Get(context.Background(), s.key, &v1alpha1.FederationCluster{}))
			}, wait, tick, "the FederationCluster was not deleted")
			require.Empty(t, memberPods(t, s.env, s.ns))
			after := memberClaims(t, s)
			if policy == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				assert.Empty(t, after)
			} else {
				assert.Equal(t, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
		})
	}
}

// TestClaimsGrowOneAtATime: growing the template's storage expands every
// claim in place, one pod's claims at a time (the next only once the last
// reported its new capacity), and where the StorageClass does not allow
// expansion, StorageExpanded says so and nothing is deleted.
func TestClaimsGrowOneAtATime(t *testing.T) {
	s := startScenario(t, "grow", func(ns string) *v1alpha1.FederationCluster {
		fc := claimFC(nil)(ns)
		fc.Spec.Components[0].Topology[1].StorageClassName = ptr.To("fixed")
		return fc
	})
	ensureStorageClasses(t, s)
	rz := startResizer(t, s)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for key, claim := range memberClaims(c, s) {
			assert.Equal(c, corev1.ClaimBound, claim.Status.Phase, "claim %s", key)
		}
	}, wait, tick, "the claims were not bound")
	before := memberClaims(t, s)
	pods := memberPods(t, s.env, s.ns)

	updateFC(t, s.env, s.key, func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[0].VolumeClaimTemplates[0].Spec.Resources.Requests.Storage = "2Gi"
	})
	grown := []string{memberA + "/data-" + fcName + "-db-0", memberA + "/data-" + fcName + "-db-1"}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claims := memberClaims(c, s)
		for _, key := range grown {
			have := claims[key].Status.Capacity[corev1.ResourceStorage]
			assert.Equal(c, "2Gi", have.String(), "capacity of %s", key)
		}
	}, wait, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(getFC(c, s.env, s.key).Status.Conditions, v1alpha1.ConditionStorageExpanded)
		require.NotNil(c, cond)
		assert.Equal(c, v1alpha1.ReasonExpansionUnsupported, cond.Reason)
		assert.Contains(c, cond.Message, "data-"+fcName+"-db-2 in "+memberB)
	}, wait, tick)

	rz.mu.Lock()
	assert.True(t, rz.asked[grown[1]].After(rz.resized[grown[0]]), "the second claim was asked to grow (%s) before the first had (%s)",
		rz.asked[grown[1]].Format("15:04:05.000"), rz.resized[grown[0]].Format("15:04:05.000"))
	rz.mu.Unlock()
	after := memberClaims(t, s)
	for key, c := range before {
		assert.Equal(t, c.UID, after[key].UID, "claim %s was replaced", key)
	}
	fixed := after[memberB+"/data-"+fcName+"-db-2"].Spec.Resources.Requests[corev1.ResourceStorage]
	assert.Equal(t, "1Gi", fixed.String(), "a claim whose class does not allow expansion was changed")
	for key, pod := range memberPods(t, s.env, s.ns) {
		assert.Equal(t, pods[key].UID, pod.UID, "expansion restarted %s", key)
	}
}

// TestClaimTemplatesAreImmutable: the API refuses every change of a claim
// template but a larger storage request.
func TestClaimTemplatesAreImmutable(t *testing.T) {
	s := startScenario(t, "immutable", claimFC(nil))
	refused := map[string]func(*v1alpha1.FederationCluster){
		"shrink": func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].VolumeClaimTemplates[0].Spec.Resources.Requests.Storage = "512Mi"
		},
		"access modes": func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].VolumeClaimTemplates[0].Spec.AccessModes = []string{"ReadWriteMany"}
		},
		"class": func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("fast")
		},
		"rename": func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].VolumeClaimTemplates[0].Metadata.Name = "other"
		},
		"add": func(fc *v1alpha1.FederationCluster) {
			vct := fc.Spec.Components[0].VolumeClaimTemplates[0]
			vct.Metadata.Name = "logs"
			fc.Spec.Components[0].VolumeClaimTemplates = append(fc.Spec.Components[0].VolumeClaimTemplates, vct)
		},
		"not a quantity": func(fc *v1alpha1.FederationCluster) {
			fc.Spec.Components[0].VolumeClaimTemplates[0].Spec.Resources.Requests.Storage = "lots"
		},
	}
	for name, edit := range refused {
		fc := getFC(t, s.env, s.key)
		edit(fc)
		err := s.env.Host.Client.Update(context.Background(), fc)
		assert.True(t, apierrors.IsInvalid(err), "%s was not refused: %v", name, err)
	}
	fc := getFC(t, s.env, s.key)
	fc.Spec.Components[0].VolumeClaimTemplates[0].Spec.Resources.Requests.Storage = "3Gi"
	assert.NoError(t, s.env.Host.Client.Update(context.Background(), fc), "growing storage was refused")
	dup := claimFC(nil)(s.ns)
	dup.Name = "dup"
	vct := dup.Spec.Components[0].VolumeClaimTemplates[0]
	dup.Spec.Components[0].VolumeClaimTemplates = append(dup.Spec.Components[0].VolumeClaimTemplates, vct)
	assert.True(t, apierrors.IsInvalid(s.env.Host.Client.Create(context.Background(), dup)), "duplicate template names were accepted")
}

// TestPendingClaimIsReported: a replacement that stays unavailable past
// progressDeadlineSeconds while its claim is not Bound (envtest binds no
// claim) is reported as ClaimPending, naming the claim and its member, in
// the Progressing condition and in one Warning Event.
func TestPendingClaimIsReported(t *testing.T) {
	s := startScenario(t, "pending", func(ns string) *v1alpha1.FederationCluster {
		fc := claimFC(nil)(ns)
		fc.Spec.ProgressDeadlineSeconds = ptr.To(int32(2))
		return fc
	})
	// The upgrade's first step replaces k8s-a's highest ordinal.
	s.kubelet.hold(t, s.ns, fcName+"-db-1")
	updateFC(t, s.env, s.key, setImages("2"))
	claim := "data-" + fcName + "-db-1"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := progressing(c, s)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, v1alpha1.ReasonClaimPending, cond.Reason)
		assert.Contains(c, cond.Message, "claim "+claim+" in member "+memberA)
		events := hostEvents(c, s)[federation.EventClaimPending]
		if assert.Len(c, events, 1) {
			assert.Contains(c, events[0], claim)
		}
	}, time.Minute, 100*time.Millisecond)
	assert.Empty(t, hostEvents(t, s)[federation.EventProgressDeadlineExceeded], "a pending claim is reported as such")
}
