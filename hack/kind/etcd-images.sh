#!/usr/bin/env bash
# etcd-images.sh builds fedop's etcd images from Go modules (hack/etcd/build.sh:
# etcd, etcdctl and the hook agent for every pinned etcd version, and the
# etcdcheck checker), each FROM scratch, and loads them into the member
# clusters `make kind-up` made:
#
#   fedop.local/etcd:<version>        one per hack/etcd/v*/ (v3.6.15, v3.6.16)
#   fedop.local/etcdcheck:<hash>      the checker, tagged by its inputs
#
# The checker's tag is written to .kind/images/etcdcheck.tag. An image is
# rebuilt only when its inputs changed, and kind skips an image a node has
# already: a second run takes seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=$KIND_WORK/images/etcd
mkdir -p "$out"
"$ROOT/hack/etcd/build.sh" "$out" >"$KIND_WORK/images/etcd-build.log" 2>&1 || {
  cat "$KIND_WORK/images/etcd-build.log" >&2
  die "building the etcd binaries failed"
}
images=()
for dir in "$out"/v*/; do
  version=$(basename "$dir")
  build_image "$dir" "$ETCD_REPO:$version"
  images+=("$ETCD_REPO:$version")
done
tag=$(context_hash "$out/etcdcheck")
build_image "$out/etcdcheck" "$ETCDCHECK_REPO:$tag"
echo "$tag" >"$KIND_WORK/images/etcdcheck.tag"
images+=("$ETCDCHECK_REPO:$tag")

pids=()
for name in $KIND_MEMBERS; do
  "$KIND" load docker-image --name "$(cluster_name "$name")" "${images[@]}" >>"$KIND_WORK/load.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || die "loading the etcd images into a member failed; see $KIND_WORK/load.log"
done
log "etcd images in $KIND_MEMBERS: ${images[*]}"
