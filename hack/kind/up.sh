#!/usr/bin/env bash
# up.sh (`make kind-up`) creates fedop's kind clusters and deploys fedop in
# them the way a user would:
#
#   1. a Docker engine that can run kind (hack/kind/docker.sh ensure);
#   2. kind clusters <prefix>host, <prefix>k8s-a and <prefix>k8s-b (or the
#      members KIND_MEMBERS names), one node each, created in parallel from
#      the node image hack/kind/lib.sh names (fedop's offline image, or
#      FEDOP_KIND_IMAGE); member nodes are labelled
#      topology.kubernetes.io/zone a, b, c, ... in order, as the sample
#      expects; the n-th cluster (host 0) has pod subnet 10.(240+n).0.0/16
#      and Service subnet 10.(96+n).0.0/16;
#   3. one flat pod network across the clusters (hack/kind/network.sh):
#      routes between the nodes' pod CIDRs, no masquerading between them;
#   4. images built locally: fedop-manager (FROM scratch, the static binary)
#      loaded into the host, the e2e workload (Debian's busybox-static
#      answering HTTP) loaded into the members, local-path-provisioner
#      loaded into every cluster;
#   5. storage in every cluster: local-path-provisioner as the default
#      StorageClass "standard" (hack/kind/storage.yaml);
#   6. on the host: the CRD, then config/default through hack/kind/manager
#      and hack/manifests.sh (the manager Deployment in fedop-system with
#      leader election, its ServiceAccount, RBAC, health probes, the metrics
#      Service; metrics served securely, as users run it);
#   7. every member registered with hack/register-member.sh, addressed by
#      its node container's name on the kind network
#      (https://<cluster>-control-plane:6443), which is where the in-cluster
#      manager reaches it.
#
# Idempotent: clusters that exist are kept, images are rebuilt only when
# their inputs changed, the manifests are applied again. Kubeconfigs (with
# the ports published on this machine) are written to $KIND_WORK
# (.kind/<name>.kubeconfig); nothing touches ~/.kube/config.
# hack/kind/check.sh (`make kind-check`) shows that the pod network, the
# storage and the workload's endpoints work.
#
# Environment:
#   KIND_PREFIX    cluster name prefix (default fedop-)
#   KIND_MEMBERS   member names (default "k8s-a k8s-b"), at most 8; the n-th
#                  member's node is in zone a, b, c, ... in order
#   FEDOP_KIND_IMAGE  node image to use instead of fedop's offline one
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
require_bins kind kubectl
KUBECTL=$(kubectl_bin)

log "== Docker"
"$KIND_DIR/docker.sh" ensure

image=$(kind_node_image)
if [[ -z ${FEDOP_KIND_IMAGE:-} ]] && ! docker image inspect "$image" >/dev/null 2>&1; then
  die "node image $image is not built: run 'make kind-image' first (or set FEDOP_KIND_IMAGE)"
fi

log "== Clusters ($(kind_cluster_names | tr '\n' ' ')) from $image"
mkdir -p "$KIND_WORK"
existing=$(existing_clusters) || die "cannot list the kind clusters"
pids=()
for name in $KIND_HOST $KIND_MEMBERS; do
  create_cluster "$name" "$image" "$existing" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
((failed == 0)) || die "creating a kind cluster failed; logs in $KIND_WORK/create-*.log"

log "== Flat pod network"
"$KIND_DIR/network.sh"

log "== Images"
"$KIND_DIR/images.sh"
mapfile -t workload < <(workload_images)
pids=()
for name in $KIND_HOST $KIND_MEMBERS; do
  if [[ $name == "$KIND_HOST" ]]; then
    images=("$(manager_image)" "$(storage_image)")
  else
    images=("${workload[@]}" "$(storage_image)")
  fi
  "$KIND" load docker-image --name "$(cluster_name "$name")" "${images[@]}" >>"$KIND_WORK/load.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || die "loading images into a cluster failed; see $KIND_WORK/load.log"
done

log "== Storage (local-path-provisioner, StorageClass standard)"
storage=$(sed "s|@IMAGE@|$(storage_image)|g" "$KIND_DIR/storage.yaml")
for name in $KIND_HOST $KIND_MEMBERS; do
  kc=$(kind_kubeconfig "$name")
  # A StorageClass's provisioner cannot change: a "standard" class of
  # another provisioner (a node image built before fedop installed
  # local-path-provisioner held the in-tree host-path one) is replaced.
  provisioner=$("$KUBECTL" --kubeconfig "$kc" get storageclass standard -o jsonpath='{.provisioner}' 2>/dev/null || true)
  if [[ -n $provisioner && $provisioner != rancher.io/local-path ]]; then
    "$KUBECTL" --kubeconfig "$kc" delete storageclass standard >/dev/null
  fi
  # --force-conflicts: kind's own node images create the same objects with
  # kubectl create; fedop's image and settings win.
  "$KUBECTL" --kubeconfig "$kc" apply --server-side --force-conflicts -f - >/dev/null <<<"$storage"
done
for name in $KIND_HOST $KIND_MEMBERS; do
  "$KUBECTL" --kubeconfig "$(kind_kubeconfig "$name")" -n local-path-storage \
    rollout status deployment/local-path-provisioner --timeout=180s >/dev/null ||
    die "local-path-provisioner is not ready in $(cluster_name "$name")"
done

log "== fedop on $(cluster_name "$KIND_HOST")"
host_kc=$(kind_kubeconfig "$KIND_HOST")
"$KUBECTL" --kubeconfig "$host_kc" apply --server-side -k "$ROOT/config/crd" >/dev/null
wait_crd_established "$host_kc" federationclusters.fedop.io
# hack/kind/manager with the image tag of this build, rendered by the same
# script as `make deploy` and `make build-installer`: a new binary is a new
# tag, so applying it rolls the Deployment.
"$ROOT/hack/manifests.sh" "$(manager_image)" "$KIND_DIR/manager" |
  "$KUBECTL" --kubeconfig "$host_kc" apply --server-side -f - >/dev/null
"$KUBECTL" --kubeconfig "$host_kc" -n fedop-system scale deployment/fedop-manager --replicas=1 >/dev/null
"$KUBECTL" --kubeconfig "$host_kc" -n fedop-system rollout status deployment/fedop-manager --timeout=180s

log "== Members"
for name in $KIND_MEMBERS; do
  "$ROOT/hack/register-member.sh" \
    --host-kubeconfig "$host_kc" \
    --member-kubeconfig "$(kind_kubeconfig "$name")" \
    --name "$name" \
    --server "https://$(cluster_name "$name")-control-plane:6443"
done

log "kind clusters are up in $((SECONDS - start))s. Kubeconfigs:"
for name in $KIND_HOST $KIND_MEMBERS; do
  echo "  $(kind_kubeconfig "$name")"
done
echo "Try: bin/kubectl --kubeconfig $host_kc apply -f config/samples/fedop_v1alpha1_federationcluster.yaml"
echo "(its images are not on the nodes: make e2e-kind runs the suite with the e2e workload image instead)"
