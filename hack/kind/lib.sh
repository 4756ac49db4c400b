# shellcheck shell=bash source-path=SCRIPTDIR
# Shared helpers for the kind scripts in hack/kind/. Source it; it defines
# functions and variables only, and runs nothing.
#
# Which node image to use is decided here, so that every kind script agrees:
#   - FEDOP_KIND_IMAGE set: that image, as it is. `make kind-image` then
#     builds nothing. On a machine with internet access the ordinary choice is
#     kind's own node image for the Kubernetes line fedop pins, e.g.
#     FEDOP_KIND_IMAGE=kindest/node:v1.36.x (kind pulls it).
#   - unset: the offline image that hack/kind/node-image.sh builds from Debian
#     packages and Go modules, fedop.local/kind-node:<Kubernetes version>.
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

KIND_DIR=$ROOT/hack/kind
# Everything the node image build writes stays under .kind/ (gitignored):
# cache/ holds the intermediate pieces, keyed by a hash of their inputs.
KIND_WORK=${KIND_WORK:-$ROOT/.kind}
KIND_CACHE=$KIND_WORK/cache
KIND_NODE_REPO=fedop.local/kind-node
# The label on the node image that records the hash of every input it was
# built from; node-image.sh skips the build when it matches.
KIND_INPUTS_LABEL=io.fedop.kind.inputs

# kube_version prints the k8s.io/kubernetes version that hack/tools/go.mod
# pins (v1.36.3), the same value the Makefile's KUBE_VERSION takes.
kube_version() {
  awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$ROOT/hack/tools/go.mod"
}

# kube_ldflags prints the Makefile's KUBE_LDFLAGS, so the node's binaries are
# version-stamped exactly like bin/'s. make's --eval adds a throwaway target
# that prints the variable, which keeps the Makefile the single definition.
kube_ldflags() {
  # shellcheck disable=SC2016 # $(KUBE_LDFLAGS) is make's, not the shell's
  make -s --no-print-directory -C "$ROOT" \
    --eval '_fedop_print_kube_ldflags: ; @echo $(KUBE_LDFLAGS)' _fedop_print_kube_ldflags
}

# kind_node_image prints the node image every kind script must use.
kind_node_image() {
  if [[ -n ${FEDOP_KIND_IMAGE:-} ]]; then
    echo "$FEDOP_KIND_IMAGE"
  else
    echo "$KIND_NODE_REPO:$(kube_version)"
  fi
}

# require_root fails unless the script runs as root; installing packages,
# writing /etc/docker and building root filesystems all need it.
require_root() {
  [[ $(id -u) == 0 ]] || die "$(basename "$0") must run as root"
}
