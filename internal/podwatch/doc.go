// Package podwatch watches pods in several member clusters with informers
// of its own and records, per pod instance (UID), when each change was
// received: first seen, Ready, IP, deletion, gone. From those records it
// derives what the e2e invariant checker, the integration tests' checker
// and the benchmark's observer all measure: the unavailable count of a set
// of placements and the overhead of each one-pod-at-a-time step.
//
// Shapes: StartWatch (or StartObserver, a Watch feeding a Set under a lock)
// takes member name -> *rest.Config, a namespace and a label selector per
// member; a Set maps UID -> Record; Shortfall and Gauge count pods; Steps
// turns Records into Steps with overheads as time.Durations.
//
// It is an observer: it never reads fedop's status or metrics, and it has
// no test-framework dependency (assertions stay with its callers).
package podwatch
