#!/usr/bin/env bash
# bench.sh runs fedop's benchmarks (issue 5) on a lab of its own and writes
# docs/benchmarks.md:
#
#   1. step overhead of fedop against the StatefulSet controller, in one run;
#   2. rollout efficiency against the floor N x D with a readiness delay D;
#   3. the manager's API requests per step;
#   4. the manager's memory with 1,000 and 10,000 managed pods, and with
#      10,000 pods it does not manage;
#   5. the time from a manager's start to 10 and to 50 members connected;
#   6. step overhead and the manager's goroutines with one of 10 members
#      SIGSTOPped for 10 minutes (--dead-duration);
#   7. the latency of a pod IP change to every member's EndpointSlices, and
#      the slice writes per replaced pod (issue "Discovery");
#   8. what the freshness gate costs: the /readyz probes each member serves
#      and the manager's CPU while idle with 10 and 50 members (item 5's
#      managers), and the reads it adds to a step (item 3's figure);
#   9. (with 1 and 2, issue 19) a floor controller beside fedop and the
#      StatefulSet, each step's parts, and the host writes on a step's
#      critical path;
#  10. manager start to first step after a SIGKILL mid-rollout, with the
#      lab's 2 members and with 50 apiserver-only members more;
#  11. 200 FederationClusters of 6 pods upgraded at once: one pod at a
#      time each, step overhead p99, steps per second; then the floor
#      controller with as many groups of the same pods;
#   plus Go micro-benchmarks of the planner and the revision hash.
#
# It runs the micro-benchmarks first (on a quiet machine), brings up a host
# and members k8s-a and k8s-b in BENCH_LAB_DIR (default .lab/bench, so that
# other labs are left alone) with kwok Stages of its own (below), installs
# the CRD, builds and starts bin/fedop-manager from the tree with its
# default flags, runs the measurements (hack/bench/, a Go program), prints
# the table, and always takes the lab down at the end, keeping the exit
# code. Item 7 runs with that manager, before item 4. For items 5, 6 and 8
# the program stops that manager and starts its own
# (same binary, member namespaces of their own) and apiserver-only members
# (bin/etcd and bin/kube-apiserver, in a directory under BENCH_LAB_DIR that
# it removes, processes it ends, also on failure or interrupt).
#
# Usage: hack/bench.sh [flags of hack/bench, e.g. --rounds 5 --memory-pods 5000
#        --items 5,6 --members-sizes 3,5 --dead-duration 1m
#        --items 7,8 --discovery-replacements 20 --idle-window 10s
#        --items 10,11 --restart-rounds 2 --restart-members 5
#        --many-federations 20 --many-rounds 1]
# The tools must be built (make tools); `make bench` does that first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The Makefile exports LAB_DIR (the developer's lab): never use it here.
export LAB_DIR=${BENCH_LAB_DIR:-$ROOT/.lab/bench}
export MEMBERS="k8s-a k8s-b"
# 6 nodes per zone, 3 zones: 18 fake nodes of 1000 pods per member, room
# for 5,000 managed and 10,000 unrelated pods in one member.
export LAB_NODES_PER_ZONE=6
HOST_KC=$LAB_DIR/host.kubeconfig
MANAGER_LOG=$LAB_DIR/manager.log
MANAGER_PID=$LAB_DIR/manager.pid
# The report: docs/benchmarks.md, or the file a --out flag names (the last
# one, as the program reads its flags).
OUT=$ROOT/docs/benchmarks.md
prev=
for arg in "$@"; do
  case $prev in --out | -out) OUT=$arg ;; esac
  case $arg in --out=* | -out=*) OUT=${arg#*=} ;; esac
  prev=$arg
done
start=$SECONDS
started_at=$(date +%s)
stage=""
cd "$ROOT"

begin() {
  stage=$1
  log "== $1"
}

finish() {
  local rc=$?
  if ((rc != 0)); then
    echo
    echo "=== bench failed at stage: $stage"
    if [[ -f $MANAGER_LOG ]]; then
      echo "--- last 30 lines of $MANAGER_LOG"
      tail -n 30 "$MANAGER_LOG"
    fi
  fi
  log "Taking the bench lab down"
  # The benchmark stops the manager itself before items 5 and 6; by now its
  # pid may belong to another process (pid_max can be 32768), which
  # neither this nor hack/lab.sh down (it reads the same file) may kill.
  stop_pidfile "$MANAGER_PID" "$BIN/fedop-manager"
  "$ROOT/hack/lab.sh" down >/dev/null 2>&1 || log "hack/lab.sh down failed; run LAB_DIR=$LAB_DIR hack/lab.sh down"
  log "bench: $( ((rc == 0)) && echo "done, $OUT written" || echo "FAILED (exit $rc)") in $((SECONDS - start))s"
  exit "$rc"
}
trap finish EXIT
# A signal ends the run as a failure: the EXIT trap then says so and still
# takes the lab down.
trap 'exit 130' INT
trap 'exit 143' TERM

# The lab's kwok Stages (hack/lab.sh) plus one: bench-pod-ready-after-delay
# makes a pod carrying the annotation bench.fedop.io/ready-delay Ready that
# long after it is scheduled. Its weight (1) beats pod-ready's (0) wherever
# both match.
export LAB_KWOK_STAGES=$LAB_DIR/bench-stages.yaml

# Every cluster's kube-apiserver logs each write to a FederationCluster
# (spec or status: the host's) and each pod deletion (the members'), and
# nothing else: item 9 times a step's host writes and its deletion from
# these logs (hack/bench/hostwrites.go), on the API servers, where a watch
# would see them only once their events arrived.
export LAB_AUDIT_POLICY=$LAB_DIR/audit-policy.yaml
write_audit_policy() {
  mkdir -p "$LAB_DIR"
  cat >"$LAB_AUDIT_POLICY" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
  resources:
  - group: fedop.io
    resources: [federationclusters, federationclusters/status]
- level: Metadata
  verbs: [delete]
  resources:
  - group: ""
    resources: [pods]
- level: None
EOF
}
write_bench_stages() {
  mkdir -p "$LAB_DIR"
  cat >"$LAB_KWOK_STAGES" <<'EOF'
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: bench-pod-ready-after-delay
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.metadata.annotations["bench.fedop.io/ready-delay"]'
      operator: 'Exists'
  weight: 1
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["bench.fedop.io/ready-delay"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
EOF
}

begin "Build"
require_bins etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl kubectl
mkdir -p "$LAB_DIR"
go build -o "$LAB_DIR/fedop-bench" "$ROOT/hack/bench"
# Built from the tree as it is, uncommitted changes included: the report
# names them.
make -s -C "$ROOT" build   # bin/fedop-manager, version-stamped
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
changed=$(git -C "$ROOT" status --porcelain -- api cmd federation member 2>/dev/null | awk '{print $2}' | grep -v '_test\.go$' | tr '\n' ' ' || true)
[[ -z $changed ]] || commit+=" with uncommitted changes to ${changed% }"

begin "Go micro-benchmarks"
go test -run '^$' -bench . -benchmem -count 1 ./federation/ ./federation/rollout/ | tee "$LAB_DIR/micro.txt" | grep '^Benchmark' >&2

begin "Lab (host, $MEMBERS) in $LAB_DIR"
# A fresh lab: what an earlier, interrupted run left would skew the figures.
"$ROOT/hack/lab.sh" down >/dev/null 2>&1 || true
write_bench_stages
write_audit_policy
if ! "$ROOT/hack/lab.sh" up; then
  # kwokctl picks ports by probing; another lab starting at the same moment
  # can take one first. Once more, from scratch.
  log "Lab start failed; trying once more"
  "$ROOT/hack/lab.sh" down >/dev/null 2>&1 || true
  write_bench_stages
  write_audit_policy
  "$ROOT/hack/lab.sh" up
fi

begin "CRD"
"$(kubectl_bin)" --kubeconfig "$HOST_KC" apply --server-side -k "$ROOT/config/crd" >/dev/null
wait_crd_established "$HOST_KC" federationclusters.fedop.io

begin "fedop-manager"
port=$(free_port 18380)
# Plain HTTP metrics: the benchmark scrapes them every few hundred
# milliseconds, and a TokenReview per scrape would be load of its own.
args=(--metrics-bind-address="127.0.0.1:$port" --metrics-secure=false --health-probe-bind-address=0)
pprof=()
# Profiles are taken when the manager can serve them.
if "$BIN/fedop-manager" --help 2>&1 | grep -q -- '-pprof-bind-address'; then
  pport=$(free_port $((port + 1)))
  args+=(--pprof-bind-address="127.0.0.1:$pport")
  pprof=(--pprof-url "http://127.0.0.1:$pport/debug/pprof")
fi
KUBECONFIG=$HOST_KC "$BIN/fedop-manager" "${args[@]}" >"$MANAGER_LOG" 2>&1 &
echo $! >"$MANAGER_PID"
log "fedop-manager pid $(cat "$MANAGER_PID"), ${args[*]}, log $MANAGER_LOG"

begin "Measurements"
mkdir -p "$(dirname "$OUT")"
"$LAB_DIR/fedop-bench" \
  --lab-dir "$LAB_DIR" \
  --members "${MEMBERS// /,}" \
  --manager-pid "$(cat "$MANAGER_PID")" \
  --metrics-url "http://127.0.0.1:$port/metrics" \
  --micro "$LAB_DIR/micro.txt" \
  --kwok-version "$("$BIN/kwok" --version | awk '{print $3}')" \
  --commit "$commit" \
  --script-start "$started_at" \
  --bin-dir "$BIN" \
  --manager-bin "$BIN/fedop-manager" \
  --out "$OUT" "${pprof[@]}" "$@"
# The program checks that the manager lived through items 1 to 4, and stops
# it itself before items 5 and 6.
stage="done"
