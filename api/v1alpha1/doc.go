// Package v1alpha1 holds the fedop.io/v1alpha1 API: the FederationCluster
// custom resource (spec: components and, for each, a heterogeneous topology
// of per-member placements; status: observed counts and revisions,
// conditions, and the status-flag mutex), the names of its conditions,
// labels and annotations, and generated deep copies.
//
// It holds types, constants and validation markers only: no client and no
// reconcile logic.
//
// +kubebuilder:object:generate=true
// +groupName=fedop.io
package v1alpha1
