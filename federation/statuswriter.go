package federation

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// statusRefresh is the longest a status fact that changes within a step
// (counts, rollout phases, the Progressing message, probe times) may go
// unwritten while one operation holds the mutex.
const statusRefresh = 5 * time.Second

// staleFor bounds how long a cache may be a write behind before behind
// stops saying so: a watch that lost the event is re-listed by its
// informer, and until then a conflict (requeued once) is the honest
// outcome.
const staleFor = 2 * time.Second

// statusWriter remembers, per FederationCluster, this process's last status
// write, for two decisions:
//
//   - wait: a step of an upgrade moves the counts several times (a pod
//     deleted, gone, created, Ready); writing each would cost as many API
//     writes as the step's own actions. What decides or reports a step
//     (urgent) is written at once; the rest waits until statusRefresh has
//     passed since the last write.
//   - behind: a cache that still shows the resourceVersion the last write
//     replaced has not seen that write; planning from it could only end in
//     a conflict.
//
// It lives in memory: after a restart nothing is remembered, so the first
// change is written at once.
type statusWriter struct {
	clock clock.PassiveClock

	// mu guards last.
	mu   sync.Mutex
	last map[client.ObjectKey]lastWrite
}

// lastWrite is one status write of this process.
type lastWrite struct {
	at time.Time
	// replaced is the resourceVersion the write replaced.
	replaced string
}

func newStatusWriter(c clock.PassiveClock) *statusWriter {
	return &statusWriter{clock: c, last: map[client.ObjectKey]lastWrite{}}
}

// behind reports whether fc, read from the cache, predates this process's
// last write of it, made less than staleFor ago.
func (w *statusWriter) behind(fc *v1alpha1.FederationCluster) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.last[client.ObjectKeyFromObject(fc)]
	return ok && l.replaced == fc.ResourceVersion && w.clock.Since(l.at) < staleFor
}

// wait returns how long the write of next over fc's stored status may be
// put off, or 0 when it is due at now.
func (w *statusWriter) wait(fc *v1alpha1.FederationCluster, next *v1alpha1.FederationClusterStatus, now time.Time) time.Duration {
	if urgent(fc, next) {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.last[client.ObjectKeyFromObject(fc)]
	if !ok {
		return 0
	}
	return max(0, l.at.Add(statusRefresh).Sub(now))
}

// wrote records a status write of key at now that replaced resourceVersion
// replaced.
func (w *statusWriter) wrote(key client.ObjectKey, now time.Time, replaced string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last[key] = lastWrite{at: now, replaced: replaced}
}

// forget drops what is remembered of key.
func (w *statusWriter) forget(key client.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// urgent reports whether next differs from fc's stored status in
// something that must be written now: the operation (acknowledge, then
// act), a new generation, a member's connection, or a condition's status
// or reason (outside an operation for Ready and Progressing, which move
// within every step).
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
