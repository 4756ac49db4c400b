package federation

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

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
//   - current: a cache that still shows the resourceVersion the last write
//     replaced has not seen that write; planning from it could only end in
//     a conflict. The object that write returned is what the API server
//     held then, so the reconcile plans from it instead, without waiting
//     for the watch event.
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
	// replaced is the resourceVersion the write replaced; written the one
	// it made.
	replaced, written string
	// object is the FederationCluster the write returned: the API
	// server's copy at resourceVersion written.
	object *v1alpha1.FederationCluster
}

func newStatusWriter(c clock.PassiveClock) *statusWriter {
	return &statusWriter{clock: c, last: map[client.ObjectKey]lastWrite{}}
}

// current returns the freshest known copy of fc, read from the cache:
// fc itself, or, when fc predates this process's last write of it (its
// resourceVersion is the one that write replaced, less than staleFor ago),
// a copy of the object that write returned. Nobody can have changed the
// FederationCluster between the cache's copy and the write, which carried
// the cache's resourceVersion as its precondition; a change after it makes
// the next write conflict, as a cache that is behind would.
func (w *statusWriter) current(fc *v1alpha1.FederationCluster) *v1alpha1.FederationCluster {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.last[client.ObjectKeyFromObject(fc)]
	if !ok || l.replaced != fc.ResourceVersion || w.clock.Since(l.at) >= staleFor || l.object == nil {
		return fc
	}
	return l.object.DeepCopy()
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

// wrote records a status write at now that replaced resourceVersion
// replaced and returned fc.
func (w *statusWriter) wrote(fc *v1alpha1.FederationCluster, now time.Time, replaced string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last[client.ObjectKeyFromObject(fc)] = lastWrite{at: now, replaced: replaced, written: fc.ResourceVersion, object: fc.DeepCopy()}
}

// othersStatusWrites is the predicate that passes an update of a
// FederationCluster's status that this process did not write: a user
// editing status by hand, or another manager. fedop's own status writes do
// not wake it.
func (w *statusWriter) othersStatusWrites() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldFC, ok1 := e.ObjectOld.(*v1alpha1.FederationCluster)
			newFC, ok2 := e.ObjectNew.(*v1alpha1.FederationCluster)
			if !ok1 || !ok2 || equality.Semantic.DeepEqual(oldFC.Status, newFC.Status) {
				return false
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.last[client.ObjectKeyFromObject(newFC)].written != newFC.ResourceVersion
		},
	}
}

// forget drops what is remembered of key.
func (w *statusWriter) forget(key client.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// urgent reports whether next differs from fc's stored status in
// something that must be written now: the operation (but a step settling
// into WaitingReady, stageSettled) or the ordinals (acknowledge, then act:
// an ordinal is recorded before a pod takes it), a new generation, a
// member's connection, or a condition's status or reason (within an
// operation, Ready and Progressing's reason move with every step and wait;
// Progressing's status does not).
func urgent(fc *v1alpha1.FederationCluster, next *v1alpha1.FederationClusterStatus) bool {
	cur := &fc.Status
	if cur.ObservedGeneration != next.ObservedGeneration || !sameOrdinals(cur, next) ||
		(!sameOperation(cur.Operation, next.Operation) && !stageSettled(cur.Operation, next.Operation)) {
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
		old := meta.FindStatusCondition(cur.Conditions, c.Type)
		switch {
		case old == nil:
			return true
		case inOperation && c.Type == v1alpha1.ConditionReady:
			continue // it moves within every step
		case inOperation && c.Type == v1alpha1.ConditionProgressing:
			if old.Status != c.Status {
				return true
			}
		case old.Status != c.Status || old.Reason != c.Reason:
			return true
		}
	}
	return false
}

// stageSettled reports whether next is cur with its step moved from
// Deleting to WaitingReady and nothing else changed (same pod, instance,
// target, holder and nextPod): the old instance is gone and its
// replacement was created under the acknowledged name. Recording that
// decides nothing: a reading of stage Deleting whose pod shows another UID
// is planned as WaitingReady (the planner's inFlight), after a restart as
// well, and the stage's start time bounds no hook. So it waits for the
// next write like a count (statusRefresh), and a step whose replacement
// comes up sooner costs one status write, the one that records its
// deletion.
func stageSettled(cur, next *v1alpha1.Operation) bool {
	if cur == nil || next == nil || cur.Stage != v1alpha1.StageDeleting || next.Stage != v1alpha1.StageWaitingReady {
		return false
	}
	settled := cur.DeepCopy()
	settled.Stage, settled.StageStartedTime = next.Stage, next.StageStartedTime
	return sameOperation(settled, next)
}

// sameOrdinals reports whether a and b record the same ordinals.
func sameOrdinals(a, b *v1alpha1.FederationClusterStatus) bool {
	type key struct{ component, member string }
	record := func(st *v1alpha1.FederationClusterStatus) map[key]string {
		out := map[key]string{}
		for _, c := range st.Components {
			if c.NextOrdinal != nil {
				out[key{c.Name, ""}] = fmt.Sprint(*c.NextOrdinal)
			}
			for _, p := range c.Members {
				if p.Ordinals != "" {
					out[key{c.Name, p.Member}] = p.Ordinals
				}
			}
		}
		return out
	}
	return maps.Equal(record(a), record(b))
}
