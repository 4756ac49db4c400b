#!/usr/bin/env bash
# demo.sh shows fedop's main job from a fresh clone: a lab (host + k8s-a +
# k8s-b), the CRD, fedop-manager running locally against the host, the
# sample FederationCluster brought up, then an image upgrade rolled one pod
# at a time across both members, shown as it happens.
#
# Every stage says what it does; a failure names the stage and points at the
# log. The lab is left running for you to look around; `make lab-down`
# removes it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LAB_DIR=${LAB_DIR:-$ROOT/.lab}
export LAB_DIR MEMBERS="k8s-a k8s-b"
HOST_KC=$LAB_DIR/host.kubeconfig
MANAGER_LOG=$LAB_DIR/manager.log
MANAGER_PID=$LAB_DIR/manager.pid
FC=demo
stage=""
start=$SECONDS

bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
on_error() {
  printf '\n\033[31mdemo failed at stage: %s\033[0m\n' "$stage" >&2
  [[ -f $MANAGER_LOG ]] && { echo "--- last lines of $MANAGER_LOG:" >&2; tail -n 20 "$MANAGER_LOG" >&2; }
  echo "Logs: $MANAGER_LOG and $LAB_DIR/*.log" >&2
}
trap on_error ERR
begin() { stage=$1; bold "$1"; }

begin "1/5 Tools and lab"
make -s -C "$ROOT" tools
"$ROOT/hack/lab.sh" up
KUBECTL=$(kubectl_bin)
host() { "$KUBECTL" --kubeconfig "$HOST_KC" "$@"; }

begin "2/5 CRD and fedop-manager"
host apply --server-side -k "$ROOT/config/crd" >/dev/null
wait_crd_established "$HOST_KC" federationclusters.fedop.io
echo "CRD federationclusters.fedop.io installed"
if [[ -f $MANAGER_PID ]] && kill -0 "$(cat "$MANAGER_PID")" 2>/dev/null; then
  echo "Stopping the previous fedop-manager (pid $(cat "$MANAGER_PID"))"
  kill "$(cat "$MANAGER_PID")" && sleep 1
fi
make -s -C "$ROOT" build   # bin/fedop-manager, version-stamped
# Plain HTTP metrics on localhost: curl http://127.0.0.1:18080/metrics.
KUBECONFIG=$HOST_KC nohup "$BIN/fedop-manager" --metrics-bind-address=127.0.0.1:18080 --metrics-secure=false \
  --health-probe-bind-address=127.0.0.1:18081 >"$MANAGER_LOG" 2>&1 &
echo $! >"$MANAGER_PID"
for _ in $(seq 1 60); do
  grep -q '"Starting workers".*"federationcluster"' "$MANAGER_LOG" 2>/dev/null && break
  kill -0 "$(cat "$MANAGER_PID")" 2>/dev/null || die "fedop-manager exited; see $MANAGER_LOG"
  sleep 0.5
done
echo "fedop-manager is running (pid $(cat "$MANAGER_PID"), log $MANAGER_LOG)"

# progress prints one line per change of the FederationCluster's status,
# polled every 100ms, until the file $1 exists: the operation, the stage of
# its step (Deleting, WaitingReady; Draining and Verifying with hooks, see
# make demo-hooks), the pod being acted on, and updated/ready/replicas per
# component.
progress() {
  local stop=$1 t0=$EPOCHREALTIME last="" now
  while [[ ! -e $stop ]]; do
    now=$(host get fc "$FC" -o jsonpath='{.status.operation.type}{"|"}{.status.operation.stage}{"|"}{.status.operation.member}{"|"}{.status.operation.pod}{"|"}{range .status.components[*]}{.name}={.updatedReplicas}/{.readyReplicas}/{.replicas} {end}' 2>/dev/null || true)
    if [[ -n $now && $now != "$last" ]]; then
      last=$now
      IFS='|' read -r op stage member pod comps <<<"$now"
      printf '  %6.2fs  %-10s %-12s %-22s %s\n' "$(bc <<<"$EPOCHREALTIME - $t0")" "${op:-idle}" "${stage:--}" "${pod:+$pod in $member}" "$comps"
    fi
    sleep 0.1
  done
}

# watch_start runs progress in the background; watch_stop ends it after it
# printed the final state.
watch_start() {
  rm -f "$LAB_DIR/demo.stop"
  progress "$LAB_DIR/demo.stop" &
  watcher=$!
}
watch_stop() {
  sleep 0.3
  touch "$LAB_DIR/demo.stop"
  wait "$watcher" 2>/dev/null || true
}

# settled waits until the FederationCluster's status describes its current
# generation and nothing is left to do: observedGeneration caught up,
# Ready=True, Progressing=False, every pod updated. Waiting on a condition
# alone would return at once on the previous generation's status.
settled() {
  local deadline=$((SECONDS + $1)) s
  while ((SECONDS < deadline)); do
    s=$(host get fc $FC -o jsonpath='{.metadata.generation}/{.status.observedGeneration} {.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Progressing")].status} {.status.updatedReplicas}/{.status.replicas}')
    read -r gens conds counts <<<"$s"
    if [[ ${gens%/*} == "${gens#*/}" && $conds == True/False && ${counts%/*} == "${counts#*/}" && -n ${counts%/*} ]]; then
      return 0
    fi
    sleep 0.2
  done
  echo "FederationCluster $FC did not settle within $1s: $s" >&2
  return 1
}

begin "3/5 Create the sample FederationCluster (3 components over k8s-a and k8s-b)"
if host get fc $FC >/dev/null 2>&1; then
  echo "Deleting the FederationCluster $FC left by an earlier run"
  host delete fc $FC --wait=true --timeout=60s >/dev/null
fi
host apply -f "$ROOT/config/samples/" >/dev/null
echo "       op         stage        pod                    component=updated/ready/replicas"
watch_start
settled 120
watch_stop

begin "4/5 Upgrade every component's image, one pod at a time (minReadySeconds: 1)"
images=$(host get fc $FC -o jsonpath='{range .spec.components[*]}{.template.spec.containers[0].image}{" "}{end}')
# minReadySeconds=1 makes each step last long enough to watch: kwok pods
# are Ready the moment they are scheduled.
patch='[{"op":"replace","path":"/spec/minReadySeconds","value":1}'
i=0
for image in $images; do
  patch+=","
  patch+="{\"op\":\"replace\",\"path\":\"/spec/components/$i/template/spec/containers/0/image\",\"value\":\"${image%:*}:demo-$(date +%s)\"}"
  i=$((i + 1))
done
patch+="]"
# The plugin's live view: a line per step when stdout is not a terminal.
echo "kubectl fedop status $FC -w   (ready/updated pods, cells component@member=ready/updated/desired, the lock)"
(cd "$ROOT" && go build -o "$BIN/kubectl-fedop" ./cmd/kubectl-fedop)
"$BIN/kubectl-fedop" --kubeconfig "$HOST_KC" -n default status $FC -w --no-color > >(sed -u 's/^/  /') &
status_watch=$!
upgrade_start=$SECONDS
host patch fc $FC --type=json -p "$patch" >/dev/null
total=$(host get fc $FC -o jsonpath='{.status.replicas}')
settled 180
sleep 0.3
kill "$status_watch" 2>/dev/null || true
wait "$status_watch" 2>/dev/null || true
echo
echo "Pods replaced, in order (events on the FederationCluster):"
host get events.events.k8s.io --field-selector regarding.name=$FC,reason=PodReplaced \
  --sort-by=.metadata.creationTimestamp -o custom-columns=NOTE:.note --no-headers | sed 's/^/  /' | tail -n "$total"

begin "5/5 Summary"
stage="summary"
echo "Upgrade of $total pods took $((SECONDS - upgrade_start))s; the whole demo $((SECONDS - start))s."
for m in $MEMBERS; do
  printf '  %-6s %s\n' "$m" "$("$KUBECTL" --kubeconfig "$LAB_DIR/$m.kubeconfig" get pods -l app.kubernetes.io/instance=$FC -o name | sed 's#pod/##' | sort | tr '\n' ' ')"
done
host get fc
cat <<EOF

Look around:
  export KUBECONFIG=$HOST_KC PATH=$BIN:\$PATH
  kubectl fedop status $FC        # or -w while you edit it; kubectl fedop plan $FC, kubectl fedop members
  kubectl get fc $FC -o yaml
  kubectl get events --field-selector involvedObject.name=$FC
  kubectl --kubeconfig $LAB_DIR/k8s-a.kubeconfig get pods,svc -L fedop.io/revision
  kubectl --kubeconfig $LAB_DIR/k8s-b.kubeconfig get pods,svc -L fedop.io/revision
  tail -f $MANAGER_LOG
Tear down:
  make lab-down     (also stops fedop-manager)
EOF
