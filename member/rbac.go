package member

// RBAC the member registry needs on the host, read by controller-gen (make
// manifests) into config/rbac: registration Secrets are read only in the
// member namespace (fedop-system; a deployment using another
// --member-namespace edits the Role's namespace) and updated there with
// renewed tokens, and refused kubeconfigs are reported as events.
//
// +kubebuilder:rbac:groups="",namespace=fedop-system,resources=secrets,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
