#!/usr/bin/env bash
# e2e.sh (`make e2e-kind`) runs the end-to-end suite (e2e/, build tag e2e)
# against the kind clusters hack/kind/up.sh created, with the kind
# provider: the manager is the in-cluster Deployment (killed by deleting
# its pod with grace period 0, stopped by scaling it to zero), a member goes
# down with `docker pause` of its node, and every pod runs the e2e workload
# image with an HTTP readiness probe. The suite stops the manager at its
# end; this script scales it back to one replica, leaving the clusters as
# kind-up left them. On failure it prints the manager's log tail and
# fedop's pods in every member.
#
# Usage: hack/kind/e2e.sh [go test flags, e.g. -run 'Scenario0[12]']
# E2E_NAME names the run in its last line (e2e-etcd.sh sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
KUBECTL=$(kubectl_bin)
host_kc=$(kind_kubeconfig "$KIND_HOST")
members=()
for name in $KIND_MEMBERS; do
  members+=("$name=$(kind_kubeconfig "$name")")
done
for kc in "$host_kc" $(for n in $KIND_MEMBERS; do kind_kubeconfig "$n"; done); do
  [[ -f $kc ]] || die "$kc is missing: run 'make kind-up' first"
done

diagnose() {
  local cluster name
  # A member left paused by a failed scenario answers nothing.
  for cluster in $(kind_cluster_names); do
    if [[ $(docker inspect --format '{{.State.Paused}}' "$cluster-control-plane" 2>/dev/null) == true ]]; then
      docker unpause "$cluster-control-plane" >/dev/null || true
    fi
  done
  echo
  # The suite saves each manager pod's log before it kills or stops it.
  if [[ -f $KIND_WORK/manager.log ]]; then
    echo "--- last 60 lines of $KIND_WORK/manager.log"
    tail -n 60 "$KIND_WORK/manager.log"
  fi
  # The running manager's log, which the suite has not saved.
  echo "--- last 200 lines of the running manager's log"
  "$KUBECTL" --kubeconfig "$host_kc" --request-timeout=10s -n fedop-system \
    logs deployment/fedop-manager --tail=200 2>&1 || true
  for name in $KIND_MEMBERS; do
    echo "--- fedop's pods in $name"
    "$KUBECTL" --kubeconfig "$(kind_kubeconfig "$name")" --request-timeout=10s \
      get pods -A -l app.kubernetes.io/managed-by=fedop -o wide 2>&1 || true
  done
}

# failures prints the failed tests' assertions and any panic from the
# suite's output, last, where a reader of a long log looks first.
failures() {
  [[ -f $KIND_WORK/e2e.log ]] || return 0
  echo "--- what failed (from $KIND_WORK/e2e.log)"
  "$ROOT/hack/what-failed.sh" "$KIND_WORK/e2e.log"
}

finish() {
  local rc=$?
  ((rc == 0)) || {
    diagnose
    failures
  }
  "$KUBECTL" --kubeconfig "$host_kc" -n fedop-system scale deployment/fedop-manager --replicas=1 >/dev/null 2>&1 ||
    log "could not scale fedop-manager back to 1"
  log "${E2E_NAME:-e2e-kind}: $( ((rc == 0)) && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - start))s"
  exit "$rc"
}
trap finish EXIT

cd "$ROOT"
rm -f "$KIND_WORK/manager.log" "$KIND_WORK/e2e-clients.log" "$KIND_WORK/e2e.log"
E2E_PROVIDER=kind \
  E2E_LAB_DIR=$KIND_WORK \
  E2E_HOST_KUBECONFIG=$host_kc \
  E2E_MEMBER_KUBECONFIGS=$(
    IFS=,
    echo "${members[*]}"
  ) \
  E2E_KIND_PREFIX=$KIND_PREFIX \
  E2E_WORKLOAD_IMAGE=$WORKLOAD_REPO \
  E2E_REPO_ROOT=$ROOT \
  go test -tags e2e -count=1 -v -timeout 45m ./e2e/ "$@" 2>&1 | tee "$KIND_WORK/e2e.log"
