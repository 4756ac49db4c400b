package main

// RBAC of the manager process itself, in its own namespace: leader election
// Leases and Events. Read by controller-gen (make manifests) into config/rbac.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=fedop-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
//
// Leader election records an Event (core/v1) on its Lease when this process
// becomes the leader; without this rule the host rejects it.
//
// +kubebuilder:rbac:groups="",namespace=fedop-system,resources=events,verbs=create;patch
