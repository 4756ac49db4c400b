// Package v1alpha1 will hold the fedop.io/v1alpha1 API: the FederationCluster
// custom resource (spec: components and their per-member heterogeneous
// topology; status: observed counts, revisions, conditions and the
// status-flag mutex), its conditions, and generated deep copies.
//
// It holds types and their validation markers only: no client, no logic
// beyond defaulting helpers.
package v1alpha1
