package federation

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyClock remembers when this process first saw each freshly Ready pod,
// for fedop_rollout_step_overhead_seconds. The planner's availability time
// comes from the Ready condition's lastTransitionTime, which the API keeps
// to the second: measured from it, the overhead read up to a second too
// high. The time a member's event showed the pod Ready is exact to this
// process's clock, and it is the earliest moment fedop could act.
//
// Only pods that became Ready within freshWindow of the event are noted,
// so the clock holds the pods of steps in flight, not every cached pod;
// entries older than keepFor are dropped as new ones arrive.
type readyClock struct {
	now func() time.Time

	mu   sync.Mutex
	seen map[types.UID]time.Time
}

const (
	// freshWindow is how recent a Ready transition must be to be noted:
	// two seconds covers the second-resolution truncation of
	// lastTransitionTime plus the event's delivery.
	freshWindow = 2 * time.Second
	// keepFor bounds how long a noted time is kept unused: a step whose
	// pod has been Ready longer than this is not waiting on fedop.
	keepFor = time.Minute
)

func newReadyClock(now func() time.Time) *readyClock {
	return &readyClock{now: now, seen: map[types.UID]time.Time{}}
}

// observe notes obj's first sighting as Ready, if obj is a pod that has
// just become Ready. It is called from the member event handler, for every
// event, so it does as little as it can.
func (c *readyClock) observe(obj client.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp != nil {
		return
	}
	ready, since := podReady(pod)
	now := c.now()
	if !ready || now.Sub(since) > freshWindow {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[pod.UID]; ok {
		return
	}
	for uid, t := range c.seen {
		if now.Sub(t) > keepFor {
			delete(c.seen, uid)
		}
	}
	c.seen[pod.UID] = now
}

// availableAt returns when fedop could first know that the pod uid was
// available, given the planner's availability time from the Ready
// condition: the later of the two, since the condition's time is truncated
// to the second and the event showing it arrives later still. It forgets
// uid: a step completes once.
func (c *readyClock) availableAt(uid types.UID, fromCondition time.Time) time.Time {
	c.mu.Lock()
	seen, ok := c.seen[uid]
	delete(c.seen, uid)
	c.mu.Unlock()
	if ok && seen.After(fromCondition) {
		return seen
	}
	return fromCondition
}
