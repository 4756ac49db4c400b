package main

// RBAC of the manager process itself, in its own namespace: leader election
// Leases. Read by controller-gen (make manifests) into config/rbac.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=fedop-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
