//go:build e2e

package e2e

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Scenarios of changes users make together, in one apply. This file sorts
// before scenarios_test.go, so they run first and scenario 10's decoy sweep
// stays last.

// stepAllowance is what one step of a rollout may take on the slowest
// provider, beyond spec.minReadySeconds: the pod's deletion and its
// replacement being created, scheduled, started and probed Ready.
const stepAllowance = 5 * time.Second

// TestScenario11ScaleAndUpgradeInOneApply is the Stall issue's sequence:
// alpha (a 3, b 2) and beta (b 2, a 1) at one image; one update scales
// alpha to a 2, b 4 and beta to b 1, a 2, and changes both images. fedop
// scales, then upgrades, with nothing but its own watches to wake it, one
// pod at a time. Bound: every pod step (3 added, 2 removed, 6 replaced)
// within minReadySeconds plus stepAllowance.
func TestScenario11ScaleAndUpgradeInOneApply(t *testing.T) {
	s := begin(t, "11 scale and upgrade in one apply", "stall")
	fc := s.sample()
	pd := fc.Spec.Components[0]
	alpha, beta := *pd.DeepCopy(), *pd.DeepCopy()
	alpha.Name, beta.Name = "alpha", "beta"
	// Each member's node selector as the sample's pd has it.
	placement := func(m string, n int32) v1alpha1.Placement {
		for _, p := range pd.Topology {
			if p.Member == m {
				return v1alpha1.Placement{Member: m, Replicas: n, NodeSelector: p.NodeSelector}
			}
		}
		t.Fatalf("the sample has no placement in %s", m)
		return v1alpha1.Placement{}
	}
	a, b, n := suite.memberA, suite.memberB, s.name
	alpha.Topology = []v1alpha1.Placement{placement(a, 3), placement(b, 2)}
	beta.Topology = []v1alpha1.Placement{placement(b, 2), placement(a, 1)}
	fc.Spec.Components = []v1alpha1.Component{alpha, beta}
	s.create(fc)
	s.settle()
	require.ElementsMatch(t, []string{
		a + "/" + n + "-alpha-0", a + "/" + n + "-alpha-1", a + "/" + n + "-alpha-2", b + "/" + n + "-alpha-3", b + "/" + n + "-alpha-4",
		b + "/" + n + "-beta-0", b + "/" + n + "-beta-1", a + "/" + n + "-beta-2",
	}, slices.Collect(maps.Keys(s.livePods(t))))
	s.checker.Reset()

	start := time.Now()
	s.update(func(fc *v1alpha1.FederationCluster) {
		fc.Spec.Components[0].Topology[0].Replicas = 2
		fc.Spec.Components[0].Topology[1].Replicas = 4
		fc.Spec.Components[1].Topology[0].Replicas = 1
		fc.Spec.Components[1].Topology[1].Replicas = 2
		for i := range fc.Spec.Components {
			ctr := &fc.Spec.Components[i].Template.Spec.Containers[0]
			ctr.Image = ctr.Image[:len(ctr.Image)-len("v8.5.0")] + "v8.5.1"
		}
	})
	s.settle()
	took := time.Since(start)
	const podSteps = 3 + 2 + 6
	bound := podSteps * (minReadySeconds*time.Second + stepAllowance)
	t.Logf("scale and upgrade of %d pod steps took %s (bound %s)", podSteps, took.Round(time.Millisecond), bound)
	assert.LessOrEqual(t, took, bound, "the rollout took longer than its bound: a stall")

	assert.ElementsMatch(t, []string{
		a + "/" + n + "-alpha-0", a + "/" + n + "-alpha-1", b + "/" + n + "-alpha-3", b + "/" + n + "-alpha-4", b + "/" + n + "-alpha-5", b + "/" + n + "-alpha-6",
		b + "/" + n + "-beta-0", a + "/" + n + "-beta-2", a + "/" + n + "-beta-3",
	}, slices.Collect(maps.Keys(s.livePods(t))), "pods keep their names and members")
	r := s.checker.Report()
	assert.Len(t, r.Deletions, 8, "2 removed and 6 replaced: %v", r.DeletionOrder())
	s.assertOneAtATime(r)
	s.finish(windowRollout)
}
