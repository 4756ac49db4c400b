#!/usr/bin/env bash
# undeploy.sh (`make undeploy`) removes fedop from the cluster in
# KUBECONFIG, in the order that lets fedop clean up after itself:
#
#   1. every FederationCluster is deleted, and the command waits while the
#      running manager's finalizer deletes their pods and Services in every
#      member cluster (a member that cannot be reached keeps its
#      FederationCluster until it reconnects, or until the object is
#      annotated fedop.io/skip-unreachable-cleanup: "true");
#   2. then everything `make deploy` applied: the Deployment, RBAC, the
#      metrics Service, the namespace fedop-system with the member Secrets,
#      and the CRD.
#
# Deleting the CRD first, as a plain `kubectl delete -k` would, leaves the
# FederationClusters' finalizers with no manager to run them: the deletion
# hangs, and the members keep their pods.
#
# Usage: hack/undeploy.sh [IMAGE]   (UNDEPLOY_TIMEOUT, default 5m, bounds step 1)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUBECTL=$(kubectl_bin)
if "$KUBECTL" get crd federationclusters.fedop.io >/dev/null 2>&1; then
  log "Deleting every FederationCluster; fedop-manager deletes their pods and Services in the members"
  "$KUBECTL" delete federationclusters --all --all-namespaces --wait --timeout="${UNDEPLOY_TIMEOUT:-5m}" ||
    die "FederationClusters are still being deleted (kubectl get fc -A; a member that cannot be reached keeps its finalizer); fedop is left installed"
fi
log "Deleting fedop's manifests"
"$ROOT/hack/manifests.sh" "${1:-fedop-manager:latest}" | "$KUBECTL" delete --ignore-not-found -f -
