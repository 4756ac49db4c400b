#!/usr/bin/env bash
# e2e-lab.sh runs the end-to-end suite (e2e/, build tag e2e) on a lab of its
# own: it brings up a host and members k8s-a and k8s-b under E2E_LAB_DIR
# (default .lab/e2e, so that a developer's lab in .lab and the smoke test's
# in .lab/smoke are left alone), installs the CRD, builds fedop-manager
# (the suite starts, kills and restarts it), runs the suite with the lab as
# its provider, and always takes the lab down at the end, keeping the
# suite's exit code. When the suite fails it first prints the manager's log
# tail and fedop's pods in every member.
#
# Usage: hack/e2e-lab.sh [go test flags, e.g. -run 'Scenario0[12]']
# The tools must be built (make tools); `make e2e` does that first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The Makefile exports LAB_DIR (the developer's lab): never use it here.
export LAB_DIR=${E2E_LAB_DIR:-$ROOT/.lab/e2e}
export MEMBERS="k8s-a k8s-b"
HOST_KC=$LAB_DIR/host.kubeconfig
start=$SECONDS
stage=""

begin() {
  stage=$1
  log "== $1"
}

# resume_members sends SIGCONT to this lab's kube-apiservers: a scenario
# that failed with a member down leaves it stopped, and a stopped process
# neither answers kubectl nor acts on SIGTERM.
resume_members() {
  local pids
  pids=$(pgrep -f -- "kube-apiserver.*$LAB_DIR/kwok/clusters/" || true)
  [[ -z $pids ]] || kill -CONT $pids 2>/dev/null || true
}

diagnose() {
  resume_members
  echo
  echo "=== e2e failed at stage: $stage"
  if [[ -f $LAB_DIR/manager.log ]]; then
    echo "--- last 60 lines of $LAB_DIR/manager.log"
    tail -n 60 "$LAB_DIR/manager.log"
  fi
  local m
  for m in $MEMBERS; do
    echo "--- fedop's pods in $m"
    "$(kubectl_bin)" --kubeconfig "$LAB_DIR/$m.kubeconfig" --request-timeout=10s \
      get pods -A -l app.kubernetes.io/managed-by=fedop -o wide 2>&1 || true
  done
}

finish() {
  local rc=$?
  if ((rc != 0)); then
    diagnose
  fi
  log "Taking the e2e lab down"
  resume_members
  "$ROOT/hack/lab.sh" down >/dev/null 2>&1 || log "hack/lab.sh down failed; run LAB_DIR=$LAB_DIR hack/lab.sh down"
  log "e2e: $( ((rc == 0)) && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - start))s"
  exit "$rc"
}
trap finish EXIT

begin "Lab (host, $MEMBERS) in $LAB_DIR"
require_bins etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl
# A fresh lab: what an earlier, interrupted run left would skew the suite.
"$ROOT/hack/lab.sh" down >/dev/null 2>&1 || true
rm -f "$LAB_DIR/manager.log" "$LAB_DIR/e2e-clients.log"
"$ROOT/hack/lab.sh" up

begin "CRD"
"$(kubectl_bin)" --kubeconfig "$HOST_KC" apply --server-side -k "$ROOT/config/crd" >/dev/null
wait_crd_established "$HOST_KC" federationclusters.fedop.io

begin "Build fedop-manager"
make -s -C "$ROOT" build   # bin/fedop-manager, version-stamped

begin "Suite"
members=""
for m in $MEMBERS; do
  members+="${members:+,}$m=$LAB_DIR/$m.kubeconfig"
done
cd "$ROOT"
E2E_PROVIDER=lab \
  E2E_HOST_KUBECONFIG=$HOST_KC \
  E2E_MEMBER_KUBECONFIGS=$members \
  E2E_LAB_DIR=$LAB_DIR \
  E2E_MANAGER_BINARY=$BIN/fedop-manager \
  go test -tags e2e -count=1 -timeout 30m ./e2e/ -v "$@"
