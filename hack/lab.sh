#!/usr/bin/env bash
# lab.sh runs fedop's local multi-cluster lab: a host cluster and member
# clusters, each a real control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) plus the kwok controller, run as
# plain processes by `kwokctl --runtime binary` from the binaries in bin/.
# Members get fake kwok nodes labelled with topology.kubernetes.io/zone, so
# pods are really scheduled, become Running and Ready, and are garbage
# collected. Every member is registered on the host as a user would, with
# hack/register-member.sh.
#
# Pod IPs: the kwok controller hands each pod an IP from its --cidr (kwok's
# default, 10.0.0.0/24, is the same in every cluster). The lab gives the
# n-th cluster (host 0, then the members in MEMBERS order) its own,
# 10.(240+n).0.0/16 (hack/lib.sh pod_cidr, the kind clusters' plan too), so
# pod IPs differ between members: k8s-a 10.241.x.x, k8s-b 10.242.x.x.
#
# Storage: every member has the default StorageClass "standard"
# (WaitForFirstConsumer, reclaimPolicy Delete), like the kind clusters, and
# claims of it become Bound although fake nodes mount nothing. kwok plays
# the class's provisioner, lab.fedop.io/local-path, with two Stages
# (kwok_stages below) that do what local-path-provisioner does on kind: once
# the scheduler has picked a node for a claim's pod (the claim's
# volume.kubernetes.io/selected-node annotation), a PersistentVolume
# pvc-<claim UID> of the claim's size, pre-bound to the claim and with node
# affinity to that node; kube-controller-manager binds the two, and the
# scheduler binds the pod. A Released volume is deleted. Nothing is
# provisioned before a pod needs the claim, a claim keeps its node, and a
# deleted claim's volume goes away, as on kind. Static volumes per node
# would have needed a pool size and a recycler; this needs neither, and
# `lab-up` creates no extra objects.
#
# Usage:
#   hack/lab.sh up       create (or restart) the lab; idempotent
#   hack/lab.sh down     delete every lab cluster and leave no process behind
#   hack/lab.sh status   list the lab's clusters and whether they answer
#
# Environment:
#   MEMBERS       member cluster names (default "k8s-a k8s-b")
#   LAB_DIR       state and kubeconfigs (default .lab): .lab/<name>.kubeconfig
#   LAB_ZONES     zones of each member's fake nodes (default "a b c")
#   LAB_NODES_PER_ZONE  fake nodes per zone (default 1)
#   LAB_KWOK_STAGES     a file of extra kwok Stages, appended to the lab's
#                       own (hack/bench.sh adds a readiness delay this way)
#   LAB_AUDIT_POLICY    an audit policy file for every cluster's kube-apiserver;
#                       each one's log is $LAB_DIR/kwok/clusters/<name>/logs/audit.log
#                       (hack/bench.sh times FederationCluster writes and pod
#                       deletions this way)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MEMBERS=${MEMBERS:-k8s-a k8s-b}
LAB_DIR=${LAB_DIR:-$ROOT/.lab}
LAB_ZONES=${LAB_ZONES:-a b c}
LAB_NODES_PER_ZONE=${LAB_NODES_PER_ZONE:-1}
HOST=host

# kwokctl keeps each cluster's state under KWOK_WORKDIR; keeping it inside
# LAB_DIR means the lab never touches ~/.kwok, and `down` can prove that no
# process it started is left.
export KWOK_WORKDIR=$LAB_DIR/kwok
# The lab is offline: every component comes from bin/, nothing is pulled.
# Each cluster runs one scheduler and one controller manager, so leader
# election buys nothing there; with it, stopping a member's API server for
# longer than the lease's renew deadline (a fault the e2e suite injects)
# would make them exit for good.
KWOKCTL=$BIN/kwokctl
KUBECTL=$(kubectl_bin)

# kwok_stages prints the kwok Stages every lab cluster runs. kwokctl reads
# $KWOK_WORKDIR/kwok.yaml when it creates a cluster, and Stages found there
# replace its defaults, so kwok's own defaults for a binary-runtime cluster
# are taken from the kwok module that hack/tools/go.mod pins, with one
# change, pod-delete, and two Stages of the lab's own for storage (see the
# header).
#
# kwok's pod-delete Stage finishes a terminating pod with a DELETE by name,
# grace period 0 and no UID precondition (kwok v0.8.0,
# pkg/kwok/controllers/pod_controller.go, deleteResource). That DELETE first
# lowers the pod's deletionGracePeriodSeconds to 0 (an update, so a watch
# event) and then removes it; kwok sees that update as one more terminating
# pod and plays pod-delete again. The second DELETE usually finds nothing,
# but when a controller has recreated a pod of the same name in the
# meantime (fedop and the StatefulSet controller both keep names across an
# upgrade) it deletes the fresh replacement: a deletion no controller made,
# which made e2e scenarios fail. The lab's pod-delete therefore skips pods
# whose grace period is already 0: the API server is removing those
# already. (The selector compares strings, hence tostring.)
kwok_stages() {
  local kwok dir f
  kwok=$(cd "$ROOT/hack/tools" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok) ||
    die "cannot find the kwok module: run 'make tools'"
  dir=$kwok/kustomize/stage
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml; do
    [[ -f $dir/$f ]] || die "kwok Stage $dir/$f not found"
    echo "---"
    cat "$dir/$f"
  done
  cat <<'EOF'
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.deletionGracePeriodSeconds | tostring'
      operator: 'NotIn'
      values: ['0']
  next:
    delete: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: fedop-lab-volume-provision
spec:
  resourceRef:
    apiGroup: v1
    kind: PersistentVolumeClaim
  selector:
    matchExpressions:
    - cel:
        expression: >-
          has(self.spec.storageClassName) && self.spec.storageClassName == 'standard'
    - cel:
        expression: >-
          !has(self.metadata.deletionTimestamp) && !has(self.spec.volumeName)
    - cel:
        expression: >-
          has(self.metadata.annotations) && 'volume.kubernetes.io/selected-node' in self.metadata.annotations
  steps:
  - apply:
      template: |
        apiVersion: v1
        kind: PersistentVolume
        metadata:
          name: pvc-{{ .metadata.uid }}
          annotations:
            pv.kubernetes.io/provisioned-by: lab.fedop.io/local-path
        spec:
          accessModes:
          {{ YAML .spec.accessModes 2 }}
          capacity:
            storage: {{ .spec.resources.requests.storage | Quote }}
          persistentVolumeReclaimPolicy: Delete
          storageClassName: standard
          volumeMode: {{ default "Filesystem" .spec.volumeMode | Quote }}
          claimRef:
            apiVersion: v1
            kind: PersistentVolumeClaim
            name: {{ .metadata.name | Quote }}
            namespace: {{ .metadata.namespace | Quote }}
            uid: {{ .metadata.uid | Quote }}
          hostPath:
            path: /var/local-path-provisioner/pvc-{{ .metadata.uid }}
            type: DirectoryOrCreate
          nodeAffinity:
            required:
              nodeSelectorTerms:
              - matchExpressions:
                - key: kubernetes.io/hostname
                  operator: In
                  values:
                  - {{ index .metadata.annotations "volume.kubernetes.io/selected-node" | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: fedop-lab-volume-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: PersistentVolume
  selector:
    matchExpressions:
    - cel:
        expression: >-
          has(self.metadata.annotations) && 'pv.kubernetes.io/provisioned-by' in self.metadata.annotations && self.metadata.annotations['pv.kubernetes.io/provisioned-by'] == 'lab.fedop.io/local-path'
    - cel:
        expression: >-
          !has(self.metadata.deletionTimestamp) && self.spec.persistentVolumeReclaimPolicy == 'Delete' && has(self.status.phase) && self.status.phase == 'Released'
  steps:
  - delete: true
EOF
  if [[ -n ${LAB_KWOK_STAGES:-} ]]; then
    [[ -f $LAB_KWOK_STAGES ]] || die "LAB_KWOK_STAGES=$LAB_KWOK_STAGES: no such file"
    echo "---"
    cat "$LAB_KWOK_STAGES"
  fi
}

kubeconfig_of() { echo "$LAB_DIR/$1.kubeconfig"; }

lab_clusters() {
  [[ -x $KWOKCTL ]] || return 0
  "$KWOKCTL" get clusters 2>/dev/null || true
}

answers() {
  local kc
  kc=$(kubeconfig_of "$1")
  [[ -f $kc ]] && "$KUBECTL" --kubeconfig "$kc" --request-timeout=5s get --raw /readyz >/dev/null 2>&1
}

# LAB_LOCK serializes cluster creation across every lab on this machine.
# kwokctl picks each component's port by probing which is free and avoids
# only the ports of clusters in its own workdir, so two labs created at the
# same time (a developer's, the smoke test's, the e2e suite's, the
# benchmark's) can pick the same port. Once kwokctl returns, its processes
# hold their ports. flock -o keeps the lock out of kwokctl's hands: the
# cluster's processes would inherit it and hold it as long as they run.
LAB_LOCK=${LAB_LOCK:-${TMPDIR:-/tmp}/fedop-lab.lock}

# up_cluster creates cluster $1, or starts it again when it exists but does
# not answer (for example after a reboot), and writes its kubeconfig. A
# cluster keeps the pod CIDR it was created with.
up_cluster() {
  local name=$1 cidr
  # shellcheck disable=SC2086 # one member per word
  cidr=$(pod_cidr "$(cluster_position "$name" $HOST $MEMBERS)")
  if lab_clusters | grep -qx "$name"; then
    if answers "$name"; then
      log "Cluster $name is already up"
      return 0
    fi
    log "Starting existing cluster $name"
    flock -o "$LAB_LOCK" "$KWOKCTL" start cluster --name "$name" --wait 60s >"$LAB_DIR/$name.log" 2>&1 ||
      die "starting cluster $name failed; see $LAB_DIR/$name.log"
  else
    log "Creating cluster $name (pod IPs from $cidr)"
    local audit=()
    if [[ -n ${LAB_AUDIT_POLICY:-} ]]; then
      audit=(--kube-audit-policy "$LAB_AUDIT_POLICY")
    fi
    # --kubeconfig "" keeps kwokctl from editing ~/.kube/config.
    flock -o "$LAB_LOCK" "$KWOKCTL" create cluster --name "$name" "${audit[@]}" \
      --runtime binary \
      --kubeconfig "" \
      --secure-port=true \
      --kube-authorization=true \
      --etcd-binary "$BIN/etcd" \
      --kube-apiserver-binary "$BIN/kube-apiserver" \
      --kube-controller-manager-binary "$BIN/kube-controller-manager" \
      --kube-scheduler-binary "$BIN/kube-scheduler" \
      --kwok-controller-binary "$BIN/kwok" \
      --extra-args kube-scheduler=leader-elect=false \
      --extra-args kube-controller-manager=leader-elect=false \
      --extra-args kwok-controller=cidr="$cidr" \
      --wait 60s >"$LAB_DIR/$name.log" 2>&1 ||
      die "creating cluster $name failed; see $LAB_DIR/$name.log"
  fi
  "$KWOKCTL" get kubeconfig --name "$name" >"$(kubeconfig_of "$name").tmp"
  mv "$(kubeconfig_of "$name").tmp" "$(kubeconfig_of "$name")"
  answers "$name" || die "cluster $name was created but does not answer; see $LAB_DIR/$name.log"
}

# nodes_manifest prints the fake nodes of member $1: LAB_NODES_PER_ZONE nodes
# in each of LAB_ZONES. The annotation hands them to the kwok controller,
# which keeps them Ready and runs the pods bound to them.
nodes_manifest() {
  local member=$1 zone i
  for zone in $LAB_ZONES; do
    for ((i = 0; i < LAB_NODES_PER_ZONE; i++)); do
      cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $member-$zone-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: $member-$zone-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: kwok
    topology.kubernetes.io/region: $member
    topology.kubernetes.io/zone: $zone
    type: kwok
spec: {}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "1000"}
  capacity: {cpu: "32", memory: 256Gi, pods: "1000"}
EOF
    done
  done
}

# storage_manifest prints the StorageClass every member gets; the kwok
# Stages in kwok_stages provision its claims.
storage_manifest() {
  cat <<EOF
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: lab.fedop.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
}

cmd_up() {
  require_bins etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl
  local start=$SECONDS name
  for name in $HOST $MEMBERS; do
    is_dns_label "$name" || die "cluster name '$name' is not a DNS-1123 label"
  done
  mkdir -p "$KWOK_WORKDIR"
  kwok_stages >"$KWOK_WORKDIR/kwok.yaml"
  for name in $HOST $MEMBERS; do
    up_cluster "$name"
  done
  for name in $MEMBERS; do
    log "Adding fake nodes (zones: $LAB_ZONES) and StorageClass standard to $name"
    { nodes_manifest "$name"; storage_manifest; } | "$KUBECTL" --kubeconfig "$(kubeconfig_of "$name")" apply -f - >/dev/null
  done
  for name in $MEMBERS; do
    "$ROOT/hack/register-member.sh" \
      --host-kubeconfig "$(kubeconfig_of $HOST)" \
      --member-kubeconfig "$(kubeconfig_of "$name")" \
      --name "$name"
  done
  log "Lab is up in $((SECONDS - start))s. Kubeconfigs:"
  for name in $HOST $MEMBERS; do
    echo "  $(kubeconfig_of "$name")"
  done
}

# lab_pids prints the pids of processes started from this lab's kwok
# workdir, found by their command lines.
lab_pids() {
  pgrep -f -- "$KWOK_WORKDIR/" || true
}

cmd_down() {
  local name
  # A manager that `make demo` (or the e2e suite) started against this lab.
  if [[ -f $LAB_DIR/manager.pid ]]; then
    kill "$(cat "$LAB_DIR/manager.pid")" 2>/dev/null && log "Stopped fedop-manager" || true
    rm -f "$LAB_DIR/manager.pid"
  fi
  for name in $(lab_clusters); do
    log "Deleting cluster $name"
    "$KWOKCTL" delete cluster --name "$name" >/dev/null 2>&1 || log "kwokctl could not delete $name cleanly"
  done
  # kwokctl stops what it started; anything still here (a component that
  # outlived a crashed kwokctl) is ended so that `down` always means no
  # lab process is left.
  local pids
  pids=$(lab_pids)
  if [[ -n $pids ]]; then
    log "Stopping leftover lab processes: $(echo $pids)"
    kill $pids 2>/dev/null || true
    sleep 1
    pids=$(lab_pids)
    [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
  fi
  rm -rf "$KWOK_WORKDIR"
  rm -f "$LAB_DIR"/*.kubeconfig
  [[ -z $(lab_pids) ]] || die "lab processes are still running: $(lab_pids)"
  log "Lab is down"
}

cmd_status() {
  local name
  for name in $(lab_clusters); do
    if answers "$name"; then
      echo "$name up $(kubeconfig_of "$name")"
    else
      echo "$name down"
    fi
  done
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) die "usage: $0 up|down|status" ;;
esac
