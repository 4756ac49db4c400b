package federation

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// stepClock keeps the rollout step metrics: fedop_rollout_steps_total and
// fedop_rollout_step_overhead_seconds, the time from the previous step's
// pod becoming available to the next deletion issued.
//
// The planner's availability time comes from the Ready condition's
// lastTransitionTime, which the API keeps to the second: measured from it,
// the overhead read up to a second too high. So the clock also watches the
// member caches' pods (handler) and notes when this process first saw each
// freshly Ready pod: exact to this process's clock, and the earliest
// moment fedop could act. Only pods that became Ready within freshWindow
// of the event are noted, so it holds the pods of steps in flight, not
// every cached pod; entries older than keepFor are dropped as new ones
// arrive.
type stepClock struct {
	clock clock.PassiveClock

	// mu guards seen.
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

func newStepClock(c clock.PassiveClock) *stepClock {
	return &stepClock{clock: c, seen: map[types.UID]time.Time{}}
}

// stepTimes are the moments of one reconcile by which the step phase
// metric (fedop_rollout_step_phase_seconds) splits a step's overhead:
// the reconcile's start, observe done, plan and status computed, status
// written (or found acknowledged), and the deletion sent and returned.
type stepTimes struct {
	start, observed, planned, acknowledged, deleteSent, deleted time.Time
}

// record counts the step plan completed, if any, in operation op of
// FederationCluster key, and, when plan's deletion was issued (deleted),
// observes the overhead since the completed step's pod became available
// and its phases (times).
func (c *stepClock) record(key client.ObjectKey, op v1alpha1.OperationType, plan rollout.Plan, deleted bool, times *stepTimes) {
	if plan.Completed == nil {
		return
	}
	rolloutSteps.WithLabelValues(key.Namespace, key.Name, string(op)).Inc()
	if !deleted {
		return
	}
	since := c.availableAt(plan.Completed.UID, plan.CompletedAt)
	stepOverhead.Observe(times.deleted.Sub(since).Seconds())
	phases := []struct {
		name     string
		from, to time.Time
	}{
		{"queue", since, times.start},
		{"observe", times.start, times.observed},
		{"plan", times.observed, times.planned},
		{"status", times.planned, times.acknowledged},
		{"act", times.acknowledged, times.deleteSent},
		{"delete", times.deleteSent, times.deleted},
	}
	for _, ph := range phases {
		// The condition's time can be later than the reconcile's start
		// (it is truncated to the second, the event later still): such a
		// queue phase is 0, not negative.
		stepPhase.WithLabelValues(ph.name).Observe(max(ph.to.Sub(ph.from), 0).Seconds())
	}
}

// handler returns the event handler that feeds the clock from a member
// cache's pod events; it enqueues nothing.
func (c *stepClock) handler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			c.observe(e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			c.observe(e.ObjectNew)
		},
	}
}

// observe notes obj's first sighting as Ready, if obj is a pod that has
// just become Ready. It runs for every pod event, so it does as little as
// it can.
func (c *stepClock) observe(obj client.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp != nil {
		return
	}
	ready, since := podwatch.ReadySince(pod)
	now := c.clock.Now()
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
func (c *stepClock) availableAt(uid types.UID, fromCondition time.Time) time.Time {
	c.mu.Lock()
	seen, ok := c.seen[uid]
	delete(c.seen, uid)
	c.mu.Unlock()
	if ok && seen.After(fromCondition) {
		return seen
	}
	return fromCondition
}
