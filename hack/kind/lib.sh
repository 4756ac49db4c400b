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
# version-stamped exactly like bin/'s.
kube_ldflags() { make_var KUBE_LDFLAGS; }

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

# --- The kind clusters (up.sh, down.sh, e2e.sh, images.sh).

KIND=$BIN/kind
KIND_PREFIX=${KIND_PREFIX:-fedop-}
KIND_MEMBERS=${KIND_MEMBERS:-k8s-a k8s-b}
KIND_HOST=host

# The images hack/kind/images.sh builds. Tags are content hashes, so a
# changed input is a new tag and nothing stale is ever run.
MANAGER_REPO=fedop.local/fedop-manager
WORKLOAD_REPO=fedop.local/e2e-workload
STORAGE_REPO=fedop.local/local-path-provisioner
ETCD_REPO=fedop.local/etcd
ETCDCHECK_REPO=fedop.local/etcdcheck
# The workload image carries every tag the e2e suite may set: the sample's
# v8.5.0 and the upgrades' v8.5.1, v8.5.2, ... (scenario 5 starts another
# upgrade whenever its ten kills outlast one).
WORKLOAD_TAGS=20

cluster_name() { echo "$KIND_PREFIX$1"; }
kind_kubeconfig() { echo "$KIND_WORK/$1.kubeconfig"; }

kind_cluster_names() {
  local name
  for name in $KIND_HOST $KIND_MEMBERS; do
    cluster_name "$name"
  done
}

# existing_clusters lists the kind clusters of this project that exist. It
# fails if kind cannot tell (Docker not answering): an empty list would
# read as "none exist".
existing_clusters() {
  local all name
  all=$("$KIND" get clusters 2>&1) || {
    echo "error: kind get clusters failed: $all" >&2
    return 1
  }
  for name in $(kind_cluster_names); do
    grep -qx "$name" <<<"$all" && echo "$name"
  done
  return 0
}

# zone_of prints the zone of member $1: a for the first member, b for the
# second, and so on; the host has none.
zone_of() {
  local i zones=(a b c d e f g h)
  # shellcheck disable=SC2086 # one member per word
  i=$(cluster_position "$1" $KIND_MEMBERS) || return 0
  echo "${zones[$i]}"
}

# service_cidr prints the Service CIDR of the kind cluster at position $1
# (0 the host, then the members): 10.(96+$1).0.0/16, inside kubeadm's
# default 10.96.0.0/12. Distinct per cluster, so that a ClusterIP names its
# cluster too; Service IPs are not routed between clusters.
service_cidr() { echo "10.$((96 + $1)).0.0/16"; }

# create_cluster creates kind cluster $1 (a name from KIND_HOST or
# KIND_MEMBERS) from node image $2 unless it is among $3 (existing_clusters,
# listed once by the caller: the creations run in parallel), and writes its
# kubeconfig. Its output goes to $KIND_WORK/create-$1.log.
create_cluster() {
  local name=$1 image=$2 existing=$3 cluster config zone pos
  cluster=$(cluster_name "$name")
  # shellcheck disable=SC2086 # one member per word
  pos=$(cluster_position "$name" $KIND_HOST $KIND_MEMBERS)
  config=$KIND_WORK/cluster-$name.yaml
  if ! grep -qx "$cluster" <<<"$existing"; then
    zone=$(zone_of "$name")
    # hack/kind/cluster.yaml holds the settings every fedop kind cluster
    # needs on these machines; the subnets, the node and its zone label are
    # added here. Each cluster's pod and Service subnets are its own, so
    # that hack/kind/network.sh can route pod IPs between clusters.
    {
      cat "$KIND_DIR/cluster.yaml"
      echo "networking:"
      echo "  podSubnet: $(pod_cidr "$pos")"
      echo "  serviceSubnet: $(service_cidr "$pos")"
      echo "nodes:"
      echo "- role: control-plane"
      if [[ -n $zone ]]; then
        echo "  labels:"
        echo "    topology.kubernetes.io/zone: \"$zone\""
      fi
    } >"$config"
    log "Creating kind cluster $cluster${zone:+ (zone $zone)}, pods $(pod_cidr "$pos")"
    "$KIND" create cluster --name "$cluster" --image "$image" --config "$config" \
      --kubeconfig "$(kind_kubeconfig "$name")" --wait 180s >"$KIND_WORK/create-$name.log" 2>&1 || {
      tail -n 30 "$KIND_WORK/create-$name.log" >&2
      return 1
    }
  else
    log "kind cluster $cluster exists"
  fi
  "$KIND" get kubeconfig --name "$cluster" >"$(kind_kubeconfig "$name").tmp"
  mv "$(kind_kubeconfig "$name").tmp" "$(kind_kubeconfig "$name")"
}

# manager_tag prints the tag of the fedop-manager image: a hash of the
# binary images.sh built.
manager_tag() {
  cat "$KIND_WORK/images/manager.tag"
}

manager_image() { echo "$MANAGER_REPO:$(manager_tag)"; }

# storage_image prints the local-path-provisioner image images.sh built:
# <module version>-<hash of its build context>.
storage_image() { echo "$STORAGE_REPO:$(cat "$KIND_WORK/images/local-path-provisioner.tag")"; }

# workload_images prints every tag of the workload image, one per line.
workload_images() {
  local i
  for ((i = 0; i < WORKLOAD_TAGS; i++)); do
    echo "$WORKLOAD_REPO:v8.5.$i"
  done
}

# build_image builds the context directory $1 into every image named in
# $2..., unless the last of them already carries the label io.fedop.inputs
# with the hash of the context. docker build runs quietly; its output is
# shown only when it fails (Docker 28's client warns on every build that the
# legacy builder is deprecated, which is noise here).
build_image() {
  local ctx=$1 inputs current args=() t
  shift
  inputs=$(context_hash "$ctx")
  current=$(docker image inspect --format '{{index .Config.Labels "io.fedop.inputs"}}' "${@: -1}" 2>/dev/null || true)
  if [[ $current == "$inputs" ]]; then
    log "Image ${1%:*} is current ($# tags)"
    return 0
  fi
  for t in "$@"; do
    args+=(-t "$t")
  done
  mkdir -p "$KIND_WORK/images"
  docker build -q --label "io.fedop.inputs=$inputs" "${args[@]}" "$ctx" >"$KIND_WORK/images/build.log" 2>&1 || {
    cat "$KIND_WORK/images/build.log" >&2
    die "docker build of $ctx failed"
  }
  log "Built ${1%:*} ($# tags)"
}

# context_hash prints a short hash of the files in directory $1, names and
# contents.
context_hash() {
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12
}
