// Package member turns member cluster registrations into one running
// controller-runtime cluster.Cluster (an informer cache and a client) per
// member cluster, and keeps each one healthy, current and observable.
//
// A member cluster is registered on the host cluster by a Secret in the
// registry's namespace (default fedop-system) labelled
// fedop.io/member-cluster=true, whose data key "kubeconfig" (or "value",
// Cluster API's format) holds a kubeconfig. The Secret's name is the
// member's name and must be a DNS-1123 label.
//
// What it does:
//
//   - ParseKubeconfig validates a kubeconfig as untrusted input: no exec
//     plugins, auth providers, basic auth or file references unless the
//     operator allows them, and never insecure TLS or a non-https server.
//   - Registry.SetupWithManager adds, to the host's manager, a controller
//     for the registration Secrets and a Runnable that probes /readyz of
//     every member. Each member runs under its own context, a child of the
//     registry's, so a member's lifetime is a context's lifetime (the
//     pattern of multicluster-runtime's kubeconfig provider). A changed
//     kubeconfig (by sha256) starts and syncs a new cluster before the old
//     one stops; a refused one, or one that does not sync, leaves the old
//     one running (and says so); a removed Secret forgets it. Annotations
//     on the Secret restrict the member's cache to namespaces
//     (AnnotationNamespaces) and name the member ServiceAccount whose
//     token the registry renews (AnnotationServiceAccount) once two
//     thirds of its lifetime have passed: a TokenRequest made with the
//     current token, the new kubeconfig checked against the member (a
//     SelfSubjectReview), then written into the Secret, where the
//     rotation above takes over.
//   - Registry.Get, State and Names answer the federation controller;
//     Registry.Watch starts a controller's watch (a source.Kind) on a
//     member's cache once per connection, and Registry.Source tells the
//     controller of member state changes through a channel: Cluster API's
//     clustercache contract, built on controller-runtime's sources.
//   - The gauges fedop_member_connected{member} and
//     fedop_member_credentials_expiry_timestamp_seconds{member} in
//     controller-runtime's metrics registry say which members are
//     connected and when their credentials expire.
//
// What it must not do: know anything of FederationClusters or any fedop
// API type; write to member clusters (callers write with Get's client;
// a TokenRequest for the member's own ServiceAccount is the exception);
// retry in loops of its own (a member that fails to start is retried by
// the controller's rate-limited requeue, and one that fails probes keeps
// its cache, whose informers reconnect by themselves, as in Cluster API's
// clustercache); block one member on another (starts are bounded by
// Options.SyncTimeout and run concurrently, probes are bounded and
// concurrent); or call out while holding its lock.
package member
