# Helpers for the kind cluster scripts (up.sh, down.sh, e2e.sh, images.sh).
# Source it after lib.sh; it defines functions and variables only.

KIND=$BIN/kind
KIND_PREFIX=${KIND_PREFIX:-fedop-}
KIND_MEMBERS=${KIND_MEMBERS:-k8s-a k8s-b}
KIND_HOST=host

# The images hack/kind/images.sh builds. Tags are content hashes, so a
# changed input is a new tag and nothing stale is ever run.
MANAGER_REPO=fedop.local/fedop-manager
WORKLOAD_REPO=fedop.local/e2e-workload
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

# existing_clusters lists the kind clusters of this project that exist.
existing_clusters() {
  local all name
  all=$("$KIND" get clusters 2>/dev/null || true)
  for name in $(kind_cluster_names); do
    grep -qx "$name" <<<"$all" && echo "$name"
  done
  return 0
}

# zone_of prints the zone of member $1: a for the first member, b for the
# second, and so on; the host has none.
zone_of() {
  local i=0 name zones=(a b c d e f g h)
  for name in $KIND_MEMBERS; do
    if [[ $name == "$1" ]]; then
      echo "${zones[$i]}"
      return
    fi
    i=$((i + 1))
  done
}

# create_cluster creates kind cluster $1 (a name from KIND_HOST or
# KIND_MEMBERS) from node image $2 unless it exists, and writes its
# kubeconfig. Its output goes to $KIND_WORK/create-$1.log.
create_cluster() {
  local name=$1 image=$2 cluster config zone
  cluster=$(cluster_name "$name")
  config=$KIND_WORK/cluster-$name.yaml
  if ! existing_clusters | grep -qx "$cluster"; then
    zone=$(zone_of "$name")
    # hack/kind/cluster.yaml holds the settings every fedop kind cluster
    # needs on these machines; the node and its zone label are added here.
    {
      cat "$KIND_DIR/cluster.yaml"
      echo "nodes:"
      echo "- role: control-plane"
      if [[ -n $zone ]]; then
        echo "  labels:"
        echo "    topology.kubernetes.io/zone: \"$zone\""
      fi
    } >"$config"
    log "Creating kind cluster $cluster${zone:+ (zone $zone)}"
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

# workload_images prints every tag of the workload image, one per line.
workload_images() {
  local i
  for ((i = 0; i < WORKLOAD_TAGS; i++)); do
    echo "$WORKLOAD_REPO:v8.5.$i"
  done
}
