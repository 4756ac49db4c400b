#!/usr/bin/env bash
# images.sh builds the two images fedop's kind clusters run, from this
# machine's files only (there is no registry to pull a base image from):
#
#   - fedop-manager: the manager built with CGO_ENABLED=0 and stamped with
#     its version, in an image FROM scratch (hack/kind/images/manager).
#     Tagged with a hash of the binary. (The root Dockerfile builds the same
#     binary for users with a registry; it pulls its base images.)
#   - the e2e workload: busybox from Debian's busybox-static package,
#     serving HTTP on port 8080 (hack/kind/images/workload), tagged v8.5.0,
#     v8.5.1, ... for the e2e suite's upgrades. The package is downloaded
#     and unpacked, not installed: busybox-static conflicts with the
#     machine's busybox, which other packages may need.
#
# Each image is built only when its inputs changed. Run by hack/kind/up.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=$KIND_WORK/images
mkdir -p "$out/manager" "$out/workload"

# build runs docker build quietly; its output is shown only when it fails
# (Docker 28's client warns on every build that the legacy builder is
# deprecated, which is noise here).
build() {
  docker build -q "$@" >"$out/build.log" 2>&1 || {
    cat "$out/build.log" >&2
    die "docker build $* failed"
  }
}

# --- fedop-manager
log "Building fedop-manager (static)"
# Stamped with the Makefile's VERSION and COMMIT, as `make build` does.
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(make_var MANAGER_LDFLAGS)" -o "$out/manager/fedop-manager" ./cmd/fedop-manager)
cp "$KIND_DIR/images/manager/Dockerfile" "$out/manager/Dockerfile"
tag=$(cat "$out/manager/fedop-manager" "$out/manager/Dockerfile" | sha256sum | cut -c1-12)
echo "$tag" >"$out/manager.tag"
if docker image inspect "$MANAGER_REPO:$tag" >/dev/null 2>&1; then
  log "Image $MANAGER_REPO:$tag is current"
else
  build -t "$MANAGER_REPO:$tag" "$out/manager"
  log "Built $MANAGER_REPO:$tag"
fi

# --- the e2e workload
busybox=$out/workload/busybox
if [[ ! -x $busybox ]]; then
  log "Fetching Debian's busybox-static"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download busybox-static >/dev/null 2>&1) || {
    apt-get update -qq >/dev/null
    (cd "$tmp" && apt-get download busybox-static >/dev/null)
  }
  dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/root"
  cp "$tmp/root/bin/busybox" "$busybox"
  rm -rf "$tmp"
fi
cp "$KIND_DIR"/images/workload/{Dockerfile,index.html,run.sh} "$out/workload/"
inputs=$(cat "$out/workload"/{busybox,Dockerfile,index.html,run.sh} | sha256sum | cut -c1-12)
mapfile -t tags < <(workload_images)
current=$(docker image inspect --format '{{index .Config.Labels "io.fedop.inputs"}}' "${tags[-1]}" 2>/dev/null || true)
if [[ $current == "$inputs" ]]; then
  log "Image $WORKLOAD_REPO is current (${#tags[@]} tags)"
else
  args=()
  for t in "${tags[@]}"; do
    args+=(-t "$t")
  done
  build --label "io.fedop.inputs=$inputs" "${args[@]}" "$out/workload"
  log "Built $WORKLOAD_REPO with ${#tags[@]} tags (v8.5.0 to v8.5.$((${#tags[@]} - 1)))"
fi
