package federation

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// statusRefresh is the longest a status fact that changes within a step
// (counts, rollout phases, the Progressing message, probe times) may go
// unwritten while one operation holds the mutex.
const statusRefresh = 5 * time.Second

// statusWrites decides when a changed status is written. A step of an
// upgrade moves the counts several times (a pod deleted, gone, created,
// Ready); writing each would cost as many API writes as the step's own
// actions. What decides or reports a step is written at once: the
// operation (acknowledge, then act), a new generation, a member's
// connection, a condition's status or reason outside an operation. The
// rest waits until statusRefresh has passed since the last write, or until
// one of those changes.
type statusWrites struct {
	// mu guards last.
	mu sync.Mutex
	// last is when this process last wrote each FederationCluster's status.
	// Empty after a restart: the first change is written at once.
	last map[client.ObjectKey]time.Time
	// replaced is the resourceVersion each last write replaced: a cache
	// still showing it has not seen that write yet.
	replaced map[client.ObjectKey]string
}

func newStatusWrites() *statusWrites {
	return &statusWrites{last: map[client.ObjectKey]time.Time{}, replaced: map[client.ObjectKey]string{}}
}

// staleFor bounds how long a cache may be a write behind before stale stops
// saying so: a watch that lost the event is re-listed by its informer, and
// until then a conflict (requeued once) is the honest outcome.
const staleFor = 2 * time.Second

// stale reports whether fc, read from the cache at now, predates this
// process's last write of it (written less than staleFor ago): planning
// from it would only end in a conflict.
func (w *statusWrites) stale(fc *v1alpha1.FederationCluster, now time.Time) bool {
	if w == nil {
		return false
	}
	key := client.ObjectKeyFromObject(fc)
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, ok := w.replaced[key]
	return ok && rv == fc.ResourceVersion && now.Sub(w.last[key]) < staleFor
}

// defer_ returns how long the write of next over fc's stored status may
// wait, or 0 when it is due now.
func (w *statusWrites) defer_(key client.ObjectKey, fc *v1alpha1.FederationCluster, next *v1alpha1.FederationClusterStatus, now time.Time) time.Duration {
	if w == nil || urgent(fc, next) {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(statusRefresh).Sub(now))
}

// wrote records a status write at now that replaced resourceVersion
// replacedRV.
func (w *statusWrites) wrote(key client.ObjectKey, now time.Time, replacedRV string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last[key] = now
	w.replaced[key] = replacedRV
}

// urgent reports whether next differs from fc's stored status in
// something that must be written now.
func urgent(fc *v1alpha1.FederationCluster, next *v1alpha1.FederationClusterStatus) bool {
	cur := &fc.Status
	if cur.ObservedGeneration != next.ObservedGeneration || !sameOperation(cur.Operation, next.Operation) {
		return true
	}
	if len(cur.Members) != len(next.Members) {
		return true
	}
	for i := range cur.Members {
		if cur.Members[i].Name != next.Members[i].Name || cur.Members[i].Connected != next.Members[i].Connected {
			return true
		}
	}
	inOperation := next.Operation != nil
	for _, c := range next.Conditions {
		if inOperation && (c.Type == v1alpha1.ConditionReady || c.Type == v1alpha1.ConditionProgressing) {
			continue // they move within every step
		}
		old := meta.FindStatusCondition(cur.Conditions, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason {
			return true
		}
	}
	return false
}

// sameOperation compares two operations, holder included: a new manager
// taking an operation over says so at once.
func sameOperation(a, b *v1alpha1.Operation) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// forget drops what is remembered of key.
func (w *statusWrites) forget(key client.ObjectKey) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
	delete(w.replaced, key)
}
