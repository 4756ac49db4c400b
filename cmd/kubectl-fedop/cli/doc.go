// Package cli is kubectl fedop: the commands of the kubectl plugin
// kubectl-fedop, built on cobra and k8s.io/cli-runtime's genericclioptions
// (--kubeconfig, --context, -n), as kubectl plugins are.
//
// join and unjoin register a member cluster on the host (a ServiceAccount
// in the member with least-privilege RBAC, a token from the TokenRequest
// API, a kubeconfig Secret on the host: the format package member reads);
// members, status and plan show what fedop sees and will do, from the
// FederationClusters' status, the member Secrets and, for plan, the
// members' pods run through the same pure planner as fedop-manager
// (federation.PlannerState, federation.Preview); pause, resume, release and
// restart change a FederationCluster the way the README describes.
//
// What it must not do: act on a member pod itself (every change goes
// through the FederationCluster, for fedop-manager to carry out one pod at
// a time), or change anything in either cluster before both have answered
// (join).
package cli
