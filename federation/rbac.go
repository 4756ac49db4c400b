package federation

// RBAC the FederationCluster controller needs on the host, read by
// controller-gen (make manifests) into config/rbac/role.yaml.
//
// +kubebuilder:rbac:groups=fedop.io,resources=federationclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fedop.io,resources=federationclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fedop.io,resources=federationclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
