#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# node-image.sh builds fedop's offline kind node image for the Kubernetes
# version hack/tools pins, from Debian packages and Go modules only: no
# image is pulled, as this project's machines reach no registry.
#
# Usage:
#   hack/kind/node-image.sh                build the image if its inputs changed
#   hack/kind/node-image.sh --print-image  print the node image kind scripts use
#
# With FEDOP_KIND_IMAGE set, nothing is built and that image is used (see
# hack/kind/lib.sh): on a machine with internet access, kind's own node image
# is the ordinary choice, and this build is not needed.
#
# What goes in, stage by stage (hack/kind/stages/):
#   rootfs    debootstrap of Debian bookworm with systemd, iptables, conntrack,
#             CNI plugins and mount tools, imported as fedop.local/kind-rootfs
#   binaries  kubelet, kubeadm, kubectl, kube-proxy, the control plane and etcd
#             (hack/tools' k8s.io/kubernetes); containerd, runc and CoreDNS
#             (their own modules in hack/kind/tools/*/); the crictl stand-in
#             and pause (hack/kind/tools/cmd/)
#   images    the images `kubeadm config images list` names, each a docker
#             import of a tiny root filesystem, saved into one archive
#   node      kind's base files (entrypoint, units) from the kind module,
#             hack/kind/node/ (containerd config, CNI template, kubelet
#             drop-in, kind's manifests), the binaries, and the images
#             preloaded into the node's containerd
#
# Caching: every stage's output is kept in .kind/cache/ under a hash of its
# inputs, and the image carries the hash of all inputs in the label
# io.fedop.kind.inputs. A run whose inputs match the image's label does
# nothing. Stage times are appended to .kind/timings.log.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=stages/rootfs.sh
source "$KIND_DIR/stages/rootfs.sh"
# shellcheck source=stages/binaries.sh
source "$KIND_DIR/stages/binaries.sh"
# shellcheck source=stages/images.sh
source "$KIND_DIR/stages/images.sh"
# shellcheck source=stages/node.sh
source "$KIND_DIR/stages/node.sh"

case ${1:-} in
  --print-image) kind_node_image; exit 0 ;;
  "") ;;
  *) die "usage: $0 [--print-image]" ;;
esac

if [[ -n ${FEDOP_KIND_IMAGE:-} ]]; then
  log "FEDOP_KIND_IMAGE=$FEDOP_KIND_IMAGE: using it, nothing to build"
  exit 0
fi

# digest prints a short sha256 of its standard input.
digest() { sha256sum | cut -c1-16; }

# files_digest prints the digest of files and directories given relative to
# the repository root: their names and contents, so that the key does not
# depend on where the repository is checked out.
files_digest() {
  (cd "$ROOT" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | digest
}

# run_stage runs "$3..." to build stage $1's output directory $2, unless a
# complete one is cached (it has .done); a partial one is built again.
run_stage() {
  local name=$1 out=$2 t0=$SECONDS
  shift 2
  if [[ -e $out/.done ]]; then
    log "$name: cached (${out#"$ROOT"/})"
    return 0
  fi
  rm -rf "$out" && mkdir -p "$out"
  log "$name: building into ${out#"$ROOT"/}"
  "$@"
  touch "$out/.done"
  record_time "$name" $((SECONDS - t0))
}

record_time() {
  log "$1: done in $2s"
  printf '%s %s %ss\n' "$(date -Iseconds)" "$1" "$2" >>"$KIND_WORK/timings.log"
}

# apt_need installs the Debian packages the build runs on this machine
# (debootstrap, libseccomp-dev for runc) when they are missing.
apt_need() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "Installing ${missing[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

BUILD_CONTAINER=
ROOTFS_PID=
cleanup() {
  [[ -z $BUILD_CONTAINER ]] || docker rm -f "$BUILD_CONTAINER" >/dev/null 2>&1 || true
  [[ -z $ROOTFS_PID ]] || kill "$ROOTFS_PID" 2>/dev/null || true
}
trap cleanup EXIT

main() {
  require_root
  local image version ldflags go_version t_all=$SECONDS
  image=$(kind_node_image)
  version=$(kube_version)
  ldflags=$(kube_ldflags)
  go_version=$(go env GOVERSION)
  mkdir -p "$KIND_CACHE" "$KIND_WORK/logs" "$KIND_WORK/tmp"

  # Inputs of each piece. binaries.sh is in every Go group's key because it
  # holds their build commands.
  local k_rootfs k_kube k_containerd k_runc k_coredns k_tools k_images k_node seccomp
  seccomp=$(dpkg-query -W -f='${Version}' libseccomp-dev 2>/dev/null || echo none)
  k_rootfs=$({ files_digest hack/kind/stages/rootfs.sh; echo "$ROOTFS_MIRROR"; } | digest)
  k_kube=$({ files_digest hack/tools/go.mod hack/tools/go.sum hack/kind/stages/binaries.sh; echo "$ldflags $go_version"; } | digest)
  k_containerd=$({ files_digest hack/kind/tools/containerd hack/kind/stages/binaries.sh; echo "$go_version"; } | digest)
  k_runc=$({ files_digest hack/kind/tools/runc hack/kind/stages/binaries.sh; echo "$go_version $seccomp"; } | digest)
  k_coredns=$({ files_digest hack/kind/tools/coredns hack/kind/stages/binaries.sh; echo "$go_version"; } | digest)
  k_tools=$({ files_digest hack/kind/tools/go.mod hack/kind/tools/go.sum hack/kind/tools/cmd hack/kind/stages/binaries.sh; echo "$go_version"; } | digest)
  k_images=$({ files_digest hack/kind/stages/images.sh; echo "$version $k_kube $k_coredns $k_tools $k_rootfs"; } | digest)
  k_node=$({
    files_digest hack/kind/node-image.sh hack/kind/lib.sh hack/kind/stages/node.sh hack/kind/node
    awk '$1 == "sigs.k8s.io/kind" { print $2 }' "$ROOT/hack/tools/go.mod"
    echo "$version $k_rootfs $k_kube $k_containerd $k_runc $k_coredns $k_tools $k_images"
  } | digest)

  "$KIND_DIR/docker.sh" ensure
  local have
  have=$(docker image inspect -f "{{ index .Config.Labels \"$KIND_INPUTS_LABEL\" }}" "$image" 2>/dev/null || true)
  if [[ $have == "$k_node" ]]; then
    log "$image is up to date (inputs $k_node)"
    return 0
  fi
  log "Building $image (inputs $k_node; a first build takes about 10 minutes on 2 cores)"
  apt_need debootstrap libseccomp-dev

  local rootfs=$KIND_CACHE/rootfs-$k_rootfs
  local kube=$KIND_CACHE/kube-$k_kube containerd=$KIND_CACHE/containerd-$k_containerd
  local runc=$KIND_CACHE/runc-$k_runc coredns=$KIND_CACHE/coredns-$k_coredns tools=$KIND_CACHE/tools-$k_tools
  local archive=$KIND_CACHE/images-$k_images.tar
  local rootfs_image=fedop.local/kind-rootfs:$k_rootfs

  # debootstrap waits on the network and the Go builds on the CPU, so the
  # root filesystem is made in the background meanwhile.
  if [[ ! -e $rootfs/.done ]]; then
    log "rootfs: debootstrap in the background (log: ${KIND_WORK#"$ROOT"/}/logs/rootfs.log)"
    (
      t0=$SECONDS
      rm -rf "$rootfs"
      build_rootfs "$rootfs"
      touch "$rootfs/.done"
      record_time rootfs $((SECONDS - t0))
    ) >"$KIND_WORK/logs/rootfs.log" 2>&1 &
    ROOTFS_PID=$!
  fi

  run_stage kube "$kube" build_kube "$kube" "$ldflags"
  run_stage containerd "$containerd" build_containerd "$containerd"
  run_stage runc "$runc" build_runc "$runc"
  run_stage coredns "$coredns" build_coredns "$coredns"
  run_stage tools "$tools" build_fedop_tools "$tools"

  if [[ -n $ROOTFS_PID ]]; then
    log "rootfs: waiting for debootstrap"
    wait "$ROOTFS_PID" || { tail -n 20 "$KIND_WORK/logs/rootfs.log" >&2; die "rootfs: debootstrap failed; see .kind/logs/rootfs.log"; }
    ROOTFS_PID=
  else
    log "rootfs: cached (${rootfs#"$ROOT"/})"
  fi
  if ! docker image inspect "$rootfs_image" >/dev/null 2>&1; then
    local t0=$SECONDS
    import_rootfs "$rootfs" "$rootfs_image"
    record_time rootfs-import $((SECONDS - t0))
  fi

  local pause
  pause=$("$kube/kubeadm" config images list --kubernetes-version "$version" | grep '/pause:')
  if [[ ! -e $archive ]]; then
    local t0=$SECONDS
    log "images: building"
    build_images "$version" "$archive" "$kube" "$coredns" "$tools" "$rootfs"
    record_time images $((SECONDS - t0))
  else
    log "images: cached (${archive#"$ROOT"/})"
  fi

  local t0=$SECONDS ctx=$KIND_WORK/tmp/node-ctx kindfiles
  local stage1=fedop.local/kind-node-build:$k_node-files stage2=fedop.local/kind-node-build:$k_node-preloaded
  kindfiles=$(kind_base_files)
  log "node: assembling"
  # Intermediate images of an interrupted build are of no further use.
  docker image ls --filter reference='fedop.local/kind-node-build' --format '{{.Repository}}:{{.Tag}}' |
    xargs -r docker rmi >/dev/null 2>&1 || true
  node_context "$ctx" "$kindfiles" "$kube" "$containerd" "$runc" "$tools" "$version" "$pause"
  docker_build --build-arg BASE="$rootfs_image" -t "$stage1" "$ctx"
  preload_images "$stage1" "$archive" "$stage2"
  local previous
  previous=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
  finish_image "$stage2" "$k_node" "$image"
  docker rmi "$stage1" "$stage2" >/dev/null
  # The image this build replaces would stay behind untagged, with its ~1 GB
  # of layers; a node container still running from it keeps it alive.
  [[ -z $previous ]] || docker rmi "$previous" >/dev/null 2>&1 || true
  rm -rf "$ctx"
  record_time node $((SECONDS - t0))

  prune_cache "$rootfs" "$kube" "$containerd" "$runc" "$coredns" "$tools" "$archive"
  docker image ls --filter reference='fedop.local/kind-rootfs' --format '{{.Repository}}:{{.Tag}}' |
    grep -vxF "$rootfs_image" | xargs -r docker rmi >/dev/null || true
  record_time total $((SECONDS - t_all))
  log "Built $image ($(docker image inspect -f '{{.Size}}' "$image" | numfmt --to=iec)B)"
}

# prune_cache removes the cached pieces that the build just made obsolete:
# every entry of .kind/cache that is not one of the given paths.
prune_cache() {
  local keep=" $* " entry
  for entry in "$KIND_CACHE"/*; do
    [[ $keep == *" $entry "* ]] && continue
    log "Removing the obsolete ${entry#"$ROOT"/}"
    rm -rf "$entry"
  done
}

main
