// Package federation holds the FederationCluster reconciler. One reconcile
// takes one FederationCluster one step, in stages that each have a file:
//
//   - reconciler.go: Options, NewReconciler, SetupWithManager, Reconcile.
//   - observe.go: read everything once, from the member caches (through
//     Members, package member's registry) and the registry's member states.
//   - rollout/: the pure planner; observed state in, one Plan out.
//   - status.go: facts to status and conditions, plain functions.
//   - operation.go: the status-flag mutex; the status write, carrying the
//     resourceVersion read, that takes, stamps or releases the operation
//     before any member is touched (acknowledge, then act); a step already
//     acknowledged (status.operation.nextPod, written while the previous
//     pod came up) acts first and is recorded right after.
//   - act.go: the member writes of the step; expectations.go remembers them
//     until the caches show them.
//   - discovery.go: each component's headless Service and the
//     EndpointSlices behind it, listing the pods of every member in every
//     member, written before act creates pods.
//   - events.go: Events for what the step changed, recorded when the
//     reconcile ends, after its member writes and status write.
//   - cleanup.go: the finalizer's work when a FederationCluster is deleted.
//   - statuswriter.go and stepclock.go: when to write status, and the step
//     metrics.
//
// It must not build member connections itself (package member does), must
// not touch objects it does not own (only objects labelled
// app.kubernetes.io/managed-by=fedop are read, written or deleted), must
// not take more than one disruptive action per reconcile, and must not
// modify an object read from a member cache: observe reads them without a
// deep copy (cacheShared), so they are the cache's own, shared with every
// reconcile; a writer copies first.
package federation
