// Package e2e is fedop's provider-agnostic end-to-end suite. It is given
// clusters, it does not create them: a host kubeconfig, member kubeconfigs
// and a Provider, whose three small interfaces are all the suite needs to
// inject faults and change registrations:
//
//   - Manager starts, stops (gracefully), kills (SIGKILL) and restarts the
//     fedop-manager under test, and says whether it runs;
//   - MemberFaults takes a member cluster's API server down and brings it
//     back;
//   - Registrar registers (or re-registers) a member cluster on the host.
//
// The local lab (hack/lab.sh) implements them in lab.go; a kind provider
// adds its own implementations and a case in NewProvider, and nothing else.
//
// The package also holds the suite's independent invariant checker
// (Checker): its own watches on every member, its own receive timestamps,
// never fedop's status. At every event it computes the number of
// unavailable pods of one FederationCluster against the desired counts of
// its spec, and it records the order of deletions and the overhead of each
// rollout step.
//
// The scenarios themselves are tests with the build tag e2e (`make e2e`
// runs them on the lab through hack/e2e-lab.sh); the files without the tag
// compile in every build, so `go vet ./...` checks them, and hold no test
// of a cluster. This package must not create or delete clusters, must not
// read fedop's status to decide whether an invariant held, and must not
// import anything provider-specific outside a provider's own file.
package e2e
