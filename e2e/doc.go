// Package e2e will hold fedop's provider-agnostic end-to-end suite (build tag
// e2e). It is given clusters (a host kubeconfig and member kubeconfigs) and
// two small fault interfaces; it never creates clusters itself.
package e2e
