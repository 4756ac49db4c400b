# Stage binaries of hack/kind/node-image.sh: every program in the node and
# its control-plane images, built from Go modules. Sourced; defines functions
# and variables only. Each group is cached under its own key (its module's
# go.mod and go.sum, the Go version, the build flags), so bumping one module
# rebuilds that group only.

KUBE_CMDS=(kubelet kubeadm kubectl kube-proxy kube-apiserver kube-controller-manager kube-scheduler)
CONTAINERD_CMDS=(containerd ctr containerd-shim-runc-v2)
# Tags kind's base image builds containerd with: no snapshotter a kind node
# never selects.
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs no_aufs"

# module_version prints the version of module $2 that the go.mod in
# directory $1 requires.
module_version() {
  (cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# build_kube builds the Kubernetes binaries and etcd into $1 from the
# hack/tools module, statically (CGO_ENABLED=0: the control-plane images have
# no C library) and stamped with the Makefile's KUBE_LDFLAGS.
#
# hack/tools/go.sum lacks the checksums of the modules only kubelet, kubeadm
# and kube-proxy import (hack/tools does not build them), so the build runs
# with -modfile on a copy of hack/tools' go.mod and go.sum that go may
# complete: same requirements, same versions, and hack/tools itself is not
# touched.
build_kube() {
  local out=$1 ldflags=$2 mod=$KIND_WORK/tmp/kube-mod
  rm -rf "$mod" && mkdir -p "$mod" "$out"
  cp "$ROOT/hack/tools/go.mod" "$ROOT/hack/tools/go.sum" "$mod/"
  local pkgs=() c
  for c in "${KUBE_CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (
    cd "$ROOT/hack/tools" || exit
    CGO_ENABLED=0 go build -mod=mod -modfile="$mod/go.mod" -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}"
    CGO_ENABLED=0 go build -mod=mod -modfile="$mod/go.mod" -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
  )
}

# build_containerd builds containerd, ctr and the runc v2 shim into $1,
# version-stamped the way containerd's Makefile does.
build_containerd() {
  local out=$1 dir=$KIND_DIR/tools/containerd version
  version=$(module_version "$dir" github.com/containerd/containerd/v2)
  local pkgs=() c
  for c in "${CONTAINERD_CMDS[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/$c"); done
  mkdir -p "$out"
  (
    cd "$dir" || exit
    CGO_ENABLED=0 go build -trimpath -tags "$CONTAINERD_TAGS" \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$version -X github.com/containerd/containerd/v2/version.Revision=$version" \
      -o "$out/" "${pkgs[@]}"
  )
}

# build_runc builds runc into $1 with seccomp support, which needs cgo and
# Debian's libseccomp-dev; the binary links libseccomp2 and glibc, both in the
# node's Debian root filesystem (the same release as the build machine's).
build_runc() {
  local out=$1 dir=$KIND_DIR/tools/runc version
  version=$(module_version "$dir" github.com/opencontainers/runc)
  [[ -e /usr/include/seccomp.h ]] || die "libseccomp-dev is missing (apt-get install libseccomp-dev)"
  mkdir -p "$out"
  (
    cd "$dir" || exit
    CGO_ENABLED=1 go build -trimpath -tags seccomp \
      -ldflags "-s -w -X main.gitCommit=$version" \
      -o "$out/runc" github.com/opencontainers/runc
  )
}

# build_coredns builds CoreDNS, with the plugin set its release compiles in.
build_coredns() {
  local out=$1 dir=$KIND_DIR/tools/coredns version
  version=$(module_version "$dir" github.com/coredns/coredns)
  mkdir -p "$out"
  (
    cd "$dir" || exit
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$version" \
      -o "$out/coredns" github.com/coredns/coredns
  )
}

# build_fedop_tools builds fedop's own node programs (the crictl stand-in and
# pause) from hack/kind/tools.
build_fedop_tools() {
  local out=$1
  mkdir -p "$out"
  (
    cd "$KIND_DIR/tools" || exit
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/" ./cmd/crictl ./cmd/pause
  )
}
