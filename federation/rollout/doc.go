// Package rollout decides the coordinator's next step: observed state in,
// one Plan out. It is pure arithmetic over what the caller observed: it
// holds no client, reads no clock (the caller passes Now), and never
// touches the API, so every decision can be table-tested.
//
// The rules it implements, for one FederationCluster:
//
//   - One pod at a time for the whole federation. A disruptive step (a pod
//     deletion, for an upgrade or a scale-in) is taken only when every member
//     used is connected, no placement has fewer available pods than it
//     desires, and every existing pod is available: the federation is never
//     more than one pod short of its desired count because of fedop.
//   - Creating a missing pod is never disruptive and may go on in connected
//     members whatever else is happening, paused or not.
//   - The operation (Initialize, Scale, Upgrade) is the status-flag mutex:
//     while one holds it, the others wait. Its pod and podUID fields name the
//     pod in flight; a pod with that name and UID is the old instance, any
//     other UID is its replacement, so a stale cache can only repeat the
//     same deletion, never start a second one.
//   - Upgrade order: components in spec order; within a component, members
//     take turns in topology order, starting after the member of the previous
//     step; within a member, the outdated pod with the highest ordinal first.
//     The approach follows tidy rolling-update executors such as
//     tidb-operator's: decide from counts, act elsewhere.
package rollout
