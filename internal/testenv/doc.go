// Package testenv starts real Kubernetes API servers for fedop's integration
// tests: one host and any number of member clusters, each its own etcd and
// kube-apiserver started by controller-runtime's envtest from the binaries
// that `make tools` builds into bin/.
//
// It gives tests clusters and kubeconfigs; it does not run controllers,
// schedulers or kubelets, so pods it sees are never scheduled or Ready unless
// a test writes their status. Use the lab (hack/lab.sh) for that.
package testenv
