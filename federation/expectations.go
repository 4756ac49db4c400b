package federation

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/federation/rollout"
)

// expectationTTL bounds how long an expectation stands in for the cache.
// Past it the cache is trusted again: a write whose watch event never came
// (the pod was created and deleted by someone else in between, say) must not
// stall the federation.
const expectationTTL = 30 * time.Second

// expectations remember, per FederationCluster, the pod creations and
// deletions this process issued that the member caches have not shown yet:
// the expectations of kube-controller-manager's ReplicaSet controller
// (pkg/controller/controller_utils.go, ControllerExpectations). A
// reconcile that runs before the cache caught up then waits instead of
// issuing the same write again.
//
// While an operation holds a step, safety does not rest on them (deletions
// carry a UID precondition, the operation is written with a
// resourceVersion precondition and names the pod being replaced); they save
// writes. Once a user releases an operation mid-step, though, the step's
// record is gone, and a deletion the cache has not shown yet is known only
// here: without them a cache a moment behind shows that pod available and
// lets the next operation take a second one down (the planner's
// TestSimulatedReleases fails so when it does not model them). They live in
// memory only: after a restart the caches start fresh, from a list that
// shows every deletion made before it, and nothing is pending.
type expectations struct {
	// mu guards byFC. Reconciles of one FederationCluster never overlap, but
	// reconciles of different ones do.
	mu   sync.Mutex
	byFC map[client.ObjectKey]map[podKey]expectation
}

type podKey struct{ member, component, name string }

type expectation struct {
	// create: the pod is expected to appear; otherwise the instance uid is
	// expected to be terminating or gone.
	create   bool
	uid      types.UID
	ordinal  int
	revision string
	at       time.Time
}

func newExpectations() *expectations {
	return &expectations{byFC: map[client.ObjectKey]map[podKey]expectation{}}
}

func (e *expectations) set(fc client.ObjectKey, k podKey, x expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byFC[fc] == nil {
		e.byFC[fc] = map[podKey]expectation{}
	}
	e.byFC[fc][k] = x
}

// expectCreate records that pod ref was created at now.
func (e *expectations) expectCreate(fc client.ObjectKey, ref rollout.PodRef, now time.Time) {
	e.set(fc, podKey{ref.Member, ref.Component, ref.Name}, expectation{create: true, ordinal: ref.Ordinal, revision: ref.Revision, at: now})
}

// expectDelete records that instance ref.UID of pod ref was deleted at now.
func (e *expectations) expectDelete(fc client.ObjectKey, ref rollout.PodRef, now time.Time) {
	e.set(fc, podKey{ref.Member, ref.Component, ref.Name}, expectation{uid: ref.UID, at: now})
}

// forget drops every expectation of fc.
func (e *expectations) forget(fc client.ObjectKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byFC, fc)
}

// apply returns pods, the cached pods of one placement, as they are
// expected to be: a created pod the cache does not show yet is added (not
// Ready), a deleted instance the cache still shows alive is marked
// terminating. Expectations the cache now satisfies, or older than
// expectationTTL, are dropped.
func (e *expectations) apply(fc client.ObjectKey, member, component string, pods []rollout.Pod, now time.Time) []rollout.Pod {
	e.mu.Lock()
	defer e.mu.Unlock()
	pending := e.byFC[fc]
	for k, x := range pending {
		if k.member != member || k.component != component {
			continue
		}
		if now.Sub(x.at) > expectationTTL {
			delete(pending, k)
			continue
		}
		i := -1
		for j := range pods {
			if pods[j].Name == k.name {
				i = j
				break
			}
		}
		switch {
		case x.create && i >= 0:
			delete(pending, k) // the cache shows it
		case x.create:
			pods = append(pods, rollout.Pod{Name: k.name, Ordinal: x.ordinal, Revision: x.revision})
		case i >= 0 && pods[i].UID == x.uid && !pods[i].Terminating:
			pods[i].Terminating = true
		default:
			delete(pending, k) // gone, terminating, or replaced
		}
	}
	if len(pending) == 0 {
		delete(e.byFC, fc)
	}
	return pods
}
