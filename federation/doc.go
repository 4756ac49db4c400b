// Package federation will hold the FederationCluster reconciler: it observes
// the pods of every member cluster from their caches, plans the next step
// with a pure planner, takes the status-flag mutex, acts at most once per
// reconcile, and writes status from what it observed.
//
// It must not build member connections itself (package member does) and
// must not touch objects it does not own.
package federation
