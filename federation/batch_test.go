package federation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// TestEnqueueAfterBatches: the discovery controller's member events are
// enqueued after the batch period, and the events of one period make one
// request; with period 0 each is enqueued at once.
func TestEnqueueAfterBatches(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, Labels: map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo",
		}}}
	}
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	defer q.ShutDown()
	ctx := context.Background()

	h := enqueueAfter(100 * time.Millisecond)
	h.Create(ctx, event.CreateEvent{Object: pod("demo-pd-0")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: pod("demo-pd-1"), ObjectNew: pod("demo-pd-1")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: pod("demo-pd-2")}, q)
	assert.Equal(t, 0, q.Len(), "nothing before the period has passed")
	require.Eventually(t, func() bool { return clock.HasWaiters() }, 5*time.Second, time.Millisecond)
	clock.Step(100 * time.Millisecond)
	require.Eventually(t, func() bool { return q.Len() == 1 }, 5*time.Second, time.Millisecond)
	req, _ := q.Get()
	assert.Equal(t, "demo", req.Name)
	q.Done(req)

	enqueueAfter(0).Create(ctx, event.CreateEvent{Object: pod("demo-pd-0")}, q)
	assert.Equal(t, 1, q.Len(), "period 0: at once")
}
