// Package member will turn member cluster registrations (Secrets holding
// kubeconfigs, on the host) into validated rest.Configs and one
// controller-runtime cluster.Cluster (an informer cache) per member, probe
// their health, and replace a member's cache when its kubeconfig changes.
//
// Kubeconfigs are untrusted input: it must refuse exec plugins, auth
// providers and file references unless the operator allows them. It knows
// nothing of FederationClusters.
package member
