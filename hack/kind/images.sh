#!/usr/bin/env bash
# images.sh builds the images fedop's kind clusters run, from this machine's
# files only (there is no registry to pull a base image from):
#
#   - fedop-manager: the manager built with CGO_ENABLED=0 and stamped with
#     its version, in an image FROM scratch (hack/kind/images/manager).
#     Tagged with a hash of the binary. (The root Dockerfile builds the same
#     binary for users with a registry; it pulls its base images.)
#   - the e2e workload: busybox from Debian's busybox-static package,
#     answering HTTP on port 8080 (hack/kind/images/workload), tagged
#     v8.5.0, v8.5.1, ... for the e2e suite's upgrades. The package is
#     downloaded and unpacked, not installed: busybox-static conflicts with
#     the machine's busybox, which other packages may need.
#   - local-path-provisioner: rancher's provisioner built from its Go module
#     (pinned in hack/kind/tools/local-path-provisioner) with CGO_ENABLED=0,
#     plus the same busybox for its helper pods, FROM scratch
#     (hack/kind/images/local-path-provisioner). Tagged <version>-<hash>.
#
# Each image is built only when its inputs changed: the image carries a
# hash of its build context in the label io.fedop.inputs. The tags of the
# manager and the provisioner are written to .kind/images/<name>.tag. Run
# by hack/kind/up.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=$KIND_WORK/images
mkdir -p "$out"

# --- Debian's static busybox, for the workload and the provisioner's helper.
busybox=$out/busybox
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

# --- fedop-manager
log "Building fedop-manager (static)"
mkdir -p "$out/manager"
# Stamped with the Makefile's VERSION and COMMIT, as `make build` does.
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(make_var MANAGER_LDFLAGS)" -o "$out/manager/fedop-manager" ./cmd/fedop-manager)
cp "$KIND_DIR/images/manager/Dockerfile" "$out/manager/"
context_hash "$out/manager" >"$out/manager.tag"
build_image "$out/manager" "$(manager_image)"

# --- the e2e workload
mkdir -p "$out/workload"
cp "$busybox" "$KIND_DIR"/images/workload/{Dockerfile,index.html,run.sh,serve.sh} "$out/workload/"
mapfile -t tags < <(workload_images)
build_image "$out/workload" "${tags[@]}"

# --- local-path-provisioner
lpp_mod=$KIND_DIR/tools/local-path-provisioner
lpp_version=$(cd "$lpp_mod" && go list -m -f '{{.Version}}' github.com/rancher/local-path-provisioner)
log "Building local-path-provisioner $lpp_version (static)"
mkdir -p "$out/local-path-provisioner"
(cd "$lpp_mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.VERSION=$lpp_version" \
  -o "$out/local-path-provisioner/local-path-provisioner" github.com/rancher/local-path-provisioner)
cp "$busybox" "$KIND_DIR/images/local-path-provisioner/Dockerfile" "$out/local-path-provisioner/"
echo "$lpp_version-$(context_hash "$out/local-path-provisioner")" >"$out/local-path-provisioner.tag"
build_image "$out/local-path-provisioner" "$(storage_image)"
