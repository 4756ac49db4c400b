#!/usr/bin/env bash
# down.sh (`make kind-down`) deletes fedop's kind clusters, then the kind
# Docker network once no container uses it, then gives back the Docker
# configuration hack/kind/docker.sh changed (its `restore`: daemon.json as it
# was, the wrapper runtime removed, dockerd stopped if it was started for
# kind). Images stay: they are the cache that makes the next kind-up fast;
# `docker image prune` or removing fedop.local/* images is the user's call.
#
# Every kind cluster whose name starts with KIND_PREFIX (default fedop-) is
# deleted, whichever KIND_MEMBERS made it: a `make kind-up
# KIND_MEMBERS="k8s-a k8s-b k8s-c"` is taken down by a plain `make
# kind-down`.
#
# Environment: KIND_PREFIX as for up.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! docker info >/dev/null 2>&1; then
  log "No Docker engine answers: no kind cluster can be left"
else
  clusters=$("$KIND" get clusters 2>/dev/null | grep "^$KIND_PREFIX" || true)
  # A paused node (an e2e run that failed with a member down) cannot be
  # deleted: unpause first.
  for cluster in $clusters; do
    if [[ $(docker inspect --format '{{.State.Paused}}' "$cluster-control-plane" 2>/dev/null) == true ]]; then
      docker unpause "$cluster-control-plane" >/dev/null
    fi
  done
  for cluster in $clusters; do
    log "Deleting kind cluster $cluster"
    "$KIND" delete cluster --name "$cluster" >/dev/null 2>&1 || die "kind could not delete $cluster"
  done
  left=$(docker ps -a --filter label=io.x-k8s.kind.cluster --format '{{.Names}}')
  if [[ -z $left ]]; then
    if docker network inspect kind >/dev/null 2>&1; then
      docker network rm kind >/dev/null
      log "Removed the kind network"
    fi
  else
    log "Other kind clusters still run ($(echo $left)); the kind network stays"
  fi
fi
rm -f "$KIND_WORK"/*.kubeconfig
"$KIND_DIR/docker.sh" restore
log "kind is down"
