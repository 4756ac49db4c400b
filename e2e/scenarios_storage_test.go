//go:build e2e

package e2e

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// claimsOf returns fedop's claims of the scenario in every member, by
// member/name, leaving out those being deleted.
func (s *scenario) claimsOf(t assert.TestingT) map[string]corev1.PersistentVolumeClaim {
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, m := range s.members() {
		var list corev1.PersistentVolumeClaimList
		err := s.memberClient(m).List(context.Background(), &list, client.InNamespace(s.ns), client.MatchingLabels{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: s.name,
		})
		if !assert.NoError(t, err, "listing claims in %s", m) {
			continue
		}
		for _, c := range list.Items {
			if c.DeletionTimestamp == nil {
				out[m+"/"+c.Name] = c
			}
		}
	}
	return out
}

// claimKey is the member/name of the claim of template data that pod
// (member/name) mounts.
func claimKey(pod string) string {
	member, name, _ := strings.Cut(pod, "/")
	return member + "/data-" + name
}

// tokens reads /token from every pod in pods (member/name) through its
// member's API server (pods/proxy): the random token the workload wrote
// into its claim on its first start.
func (s *scenario) tokens(pods []string) map[string]string {
	s.t.Helper()
	out := map[string]string{}
	for _, key := range pods {
		member, name, _ := strings.Cut(key, "/")
		cs, err := kubernetes.NewForConfig(suite.memberConfigs[s.clusters[member]])
		require.NoError(s.t, err)
		ctx, cancel := context.WithTimeout(s.t.Context(), 10*time.Second)
		body, err := cs.CoreV1().Pods(s.ns).ProxyGet("http", name, strconv.Itoa(suite.cfg.WorkloadPort), "token", nil).DoRaw(ctx)
		cancel()
		require.NoError(s.t, err, "GET /token of %s", key)
		token := strings.TrimSpace(string(body))
		require.Regexp(s.t, "^[0-9a-f]{32}$", token, "token of %s", key)
		out[key] = token
	}
	return out
}

// TestScenario17ClaimsFollowTheirPods: every pd and tikv pod of the sample
// mounts its own claim, data-<pod>, in its member. An upgrade during which
// the manager is killed with SIGKILL mid-step, then an external delete,
// replace pods but no claim: with real containers (kind), every pod serves
// the token its predecessor wrote at first. A scale-in then deletes
// exactly the claims of the pods it removed where the policy says Delete
// (pd) and keeps them where it says Retain (tikv), and deleting the
// FederationCluster (whenDeleted Retain) leaves every claim.
func TestScenario17ClaimsFollowTheirPods(t *testing.T) {
	s := begin(t, "17 claims follow their pods", "storage")
	s.createSample()
	a, b, n := suite.memberA, suite.memberB, s.name
	withClaims := []string{
		a + "/" + n + "-pd-0", a + "/" + n + "-pd-1", b + "/" + n + "-pd-2",
		a + "/" + n + "-tikv-0", a + "/" + n + "-tikv-1", b + "/" + n + "-tikv-2",
	}
	realPods := suite.cfg.Provider == ProviderKind

	// Every pod with a template has its claim, Bound, mounted; tidb has none.
	var claims map[string]corev1.PersistentVolumeClaim
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claims = s.claimsOf(c)
		require.ElementsMatch(c, mapKeys(withClaims, claimKey), slices.Collect(maps.Keys(claims)))
		for key, claim := range claims {
			assert.Equal(c, corev1.ClaimBound, claim.Status.Phase, "claim %s", key)
		}
	}, waitTimeout, poll, "every pd and tikv pod's claim, Bound")
	pods := s.livePods(t)
	for _, key := range withClaims {
		member, name, _ := strings.Cut(claimKey(key), "/")
		assert.Contains(t, pods[key].Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}}, "volumes of %s", key)
		assert.Equal(t, map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: n, v1alpha1.LabelComponent: pods[key].Labels[v1alpha1.LabelComponent],
			v1alpha1.LabelMember: member, v1alpha1.LabelPod: pods[key].Name,
		}, claims[claimKey(key)].Labels, "labels of claim %s", claimKey(key))
	}
	var first map[string]string
	if realPods {
		first = s.tokens(withClaims)
	}

	// An upgrade; the manager dies with SIGKILL once its first step has
	// deleted a pod, and starts again.
	s.setImages("v8.5.1")
	s.waitDeletions(1)
	mgr := suite.provider.Manager
	require.NoError(t, mgr.Kill(t.Context()))
	t.Logf("SIGKILL fedop-manager after deletion %v", s.checker.Report().DeletionOrder())
	require.NoError(t, mgr.Start(t.Context()))
	s.settle()
	// Someone deletes a pod; fedop creates it again, on the same claim.
	before := s.livePods(t)[b+"/"+n+"-tikv-2"]
	s.kill(b, n+"-tikv-2")
	require.Eventually(t, func() bool {
		p, ok := s.livePods(t)[b+"/"+n+"-tikv-2"]
		return ok && p.UID != before.UID && podwatch.Ready(&p)
	}, waitTimeout, poll, "tikv-2 was not created again")
	s.settle()

	r := s.checker.Report()
	s.assertOneAtATime(r)
	assert.Equal(t, s.sampleUpgradeOrder(), r.DeletionOrder(), "the upgrade's deletions")
	after := s.claimsOf(t)
	for key, c := range claims {
		if assert.Contains(t, after, key) {
			assert.Equal(t, c.UID, after[key].UID, "claim %s was replaced", key)
		}
	}
	if realPods {
		assert.Equal(t, first, s.tokens(withClaims), "tokens after the upgrade, the kill and the external delete")
	}

	// Scale-in: pd's claims go with their pods, tikv's stay.
	podsBefore := s.livePods(t)
	s.update(func(fc *v1alpha1.FederationCluster) {
		for i := range fc.Spec.Components {
			c := &fc.Spec.Components[i]
			switch c.Name {
			case "pd":
				c.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				}
				c.Topology[0].Replicas = 1
			case "tikv":
				c.Topology[0].Replicas = 1
			}
		}
	})
	s.settle()
	var removed []string
	podsAfter := s.livePods(t)
	for key := range podsBefore {
		if _, ok := podsAfter[key]; !ok {
			removed = append(removed, key)
		}
	}
	require.Len(t, removed, 2, "pods removed by the scale-in: %v", removed)
	var gone []string
	for _, key := range removed {
		if strings.Contains(key, "-pd-") {
			gone = append(gone, claimKey(key))
		}
	}
	require.Len(t, gone, 1, "pd pods removed: %v", removed)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		now := s.claimsOf(c)
		for key, claim := range claims {
			if slices.Contains(gone, key) {
				assert.NotContains(c, now, key, "claim %s of a removed pd pod", key)
				continue
			}
			if assert.Contains(c, now, key) {
				assert.Equal(c, claim.UID, now[key].UID, "claim %s", key)
			}
		}
	}, waitTimeout, poll, "after the scale-in, exactly %v are deleted", gone)
	kept := s.claimsOf(t)
	s.finish(windowFaults)

	// The FederationCluster goes; with whenDeleted Retain every claim
	// stays. The claims are the test's to delete then.
	s.deleteFC()
	require.Empty(t, s.livePods(t), "pods left after the FederationCluster's deletion")
	left := s.claimsOf(t)
	assert.Equal(t, len(kept), len(left), "claims after the FederationCluster's deletion")
	for key, c := range kept {
		if assert.Contains(t, left, key) {
			assert.Equal(t, c.UID, left[key].UID, "claim %s", key)
		}
	}
	for key, c := range left {
		member, _, _ := strings.Cut(key, "/")
		assert.NoError(t, client.IgnoreNotFound(s.memberClient(member).Delete(context.Background(), &c)), "deleting claim %s", key)
	}
}

// mapKeys applies f to every element of in.
func mapKeys(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
