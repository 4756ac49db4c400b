package federation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// recordingQueue records what a handler adds and with which delay. The
// embedded interface is nil: the handlers under test call only Add and
// AddAfter.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []delayedRequest
}

type delayedRequest struct {
	req   reconcile.Request
	after time.Duration
}

func (q *recordingQueue) Add(req reconcile.Request) { q.AddAfter(req, 0) }

func (q *recordingQueue) AddAfter(req reconcile.Request, after time.Duration) {
	q.added = append(q.added, delayedRequest{req: req, after: after})
}

// TestEnqueueAfterBatches: the discovery controller's member events are
// added to the workqueue after the batch period, so the events of one period
// make one request (the delaying queue keeps one entry per request, at its
// earliest time); with period 0 each is added at once. The queue's own
// deduplication is client-go's and not tested here; what is tested is that
// every event kind is delayed by the period and mapped to its
// FederationCluster, and that an unmanaged pod adds nothing.
func TestEnqueueAfterBatches(t *testing.T) {
	pod := func(name string, managed bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name}}
		if managed {
			p.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo"}
		}
		return p
	}
	demo := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "db", Name: "demo"}}
	ctx := context.Background()

	q := &recordingQueue{}
	h := enqueueAfter(100 * time.Millisecond)
	h.Create(ctx, event.CreateEvent{Object: pod("demo-pd-0", true)}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: pod("demo-pd-1", true), ObjectNew: pod("demo-pd-1", true)}, q)
	h.Delete(ctx, event.DeleteEvent{Object: pod("demo-pd-2", true)}, q)
	h.Generic(ctx, event.GenericEvent{Object: pod("demo-pd-3", true)}, q)
	h.Create(ctx, event.CreateEvent{Object: pod("other", false)}, q)
	want := delayedRequest{req: demo, after: 100 * time.Millisecond}
	assert.Equal(t, []delayedRequest{want, want, want, want, want}, q.added,
		"create, update (old and new), delete and generic: each after the period; the unmanaged pod adds nothing")

	q = &recordingQueue{}
	enqueueAfter(0).Create(ctx, event.CreateEvent{Object: pod("demo-pd-0", true)}, q)
	assert.Equal(t, []delayedRequest{{req: demo}}, q.added, "period 0: at once")
}
