#!/usr/bin/env bash
# demo-hooks.sh (`make demo-hooks`) shows fedop's hooks live on the kind
# clusters `make kind-up` made, with real pods that answer them (the e2e
# workload image: /drain, /undrain, /health, /calls): the sample
# FederationCluster with a preDelete hook and a postReady gate on pd and
# tikv, then an upgrade, printed as it goes (operation, stage, pod), with
# tikv-0's /health failing for a while so that the gate stops the rollout
# in front of your eyes. At the end, each pod's own log of the calls it
# got: one drain per replaced instance, before its replacement started.
#
# The FederationCluster demo-hooks/demo is left for you to look around;
# `kubectl delete fc demo -n demo-hooks` (host) removes it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUBECTL=$(kubectl_bin)
NS=demo-hooks
FC=demo
read -r -a members <<<"$KIND_MEMBERS"
a=${members[0]}
b=${members[1]:-${members[0]}}
host_kc=$(kind_kubeconfig "$KIND_HOST")
for n in $KIND_HOST $KIND_MEMBERS; do
  [[ -f $(kind_kubeconfig "$n") ]] || die "$(kind_kubeconfig "$n") is missing: run 'make kind-up' first"
done
host() { "$KUBECTL" --kubeconfig "$host_kc" "$@"; }
member() {
  local name=$1
  shift
  "$KUBECTL" --kubeconfig "$(kind_kubeconfig "$name")" "$@"
}
bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# podget GETs path on pod in member through its API server's pod proxy.
podget() { member "$1" get --raw "/api/v1/namespaces/$NS/pods/$2:8080/proxy/$3"; }

# progress prints a line per change of the operation (type, stage, pod) and
# of the Progressing reason, until the file $1 exists.
progress() {
  local stop=$1 t0=$EPOCHREALTIME last="" now
  while [[ ! -e $stop ]]; do
    now=$(host -n $NS get fc $FC -o jsonpath='{.status.operation.type}{"|"}{.status.operation.stage}{"|"}{.status.operation.pod}{"|"}{.status.operation.member}{"|"}{.status.conditions[?(@.type=="Progressing")].reason}' 2>/dev/null || true)
    if [[ -n $now && $now != "$last" ]]; then
      last=$now
      IFS='|' read -r op stage pod m reason <<<"$now"
      printf '  %6.2fs  %-8s %-13s %-24s %s\n' "$(bc <<<"$EPOCHREALTIME - $t0")" "${op:-idle}" "${stage:--}" "${pod:+$pod in $m}" "$reason"
    fi
    sleep 0.1
  done
}
watch_start() {
  rm -f "$KIND_WORK/demo-hooks.stop"
  progress "$KIND_WORK/demo-hooks.stop" &
  watcher=$!
}
watch_stop() {
  sleep 0.3
  touch "$KIND_WORK/demo-hooks.stop"
  wait "$watcher" 2>/dev/null || true
}

# settled waits until the FederationCluster is Complete at its generation.
settled() {
  local deadline=$((SECONDS + $1)) s
  while ((SECONDS < deadline)); do
    s=$(host -n $NS get fc $FC -o jsonpath='{.metadata.generation}/{.status.observedGeneration} {.status.conditions[?(@.type=="Progressing")].reason} {.status.updatedReplicas}/{.status.replicas}')
    read -r gens reason counts <<<"$s"
    if [[ ${gens%/*} == "${gens#*/}" && $reason == Complete && ${counts%/*} == "${counts#*/}" ]]; then
      return 0
    fi
    sleep 0.2
  done
  die "FederationCluster $NS/$FC did not settle within $1s: $s"
}

# fc prints the sample with the workload image, hooks on pd and tikv, and
# the given image tag.
fc() {
  local tag=$1 hooks
  hooks='
    lifecycle:
      preDelete:
        httpGet: {path: /drain, port: 8080}
        undo: {path: /undrain, port: 8080}
        timeoutSeconds: 60
      postReady:
        httpGet: {path: /health, port: 8080}
        scope: Component
        timeoutSeconds: 120'
  cat <<EOF
apiVersion: fedop.io/v1alpha1
kind: FederationCluster
metadata: {name: $FC, namespace: $NS}
spec:
  minReadySeconds: 2
  components:
EOF
  for c in pd tikv tidb; do
    cat <<EOF
  - name: $c
    template:
      spec:
        containers:
        - name: $c
          image: $WORKLOAD_REPO:$tag
          imagePullPolicy: IfNotPresent
          readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
          env: [{name: HOOK_DELAY, value: "1"}]   # each hook takes 1s, to be seen
EOF
    if [[ $c != tidb ]]; then
      echo "          volumeMounts: [{name: data, mountPath: /data}]"
      echo "    volumeClaimTemplates:"
      echo "    - metadata: {name: data}"
      echo "      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 64Mi}}}"
      echo "$hooks"
    fi
    cat <<EOF
    topology:
    - {member: $a, replicas: $([[ $c == tidb ]] && echo 1 || echo 2)}
    - {member: $b, replicas: 1}
EOF
  done
}

bold "1/4 The sample, with hooks on pd and tikv (kind members $a and $b)"
host get ns $NS >/dev/null 2>&1 || host create ns $NS >/dev/null
if host -n $NS get fc $FC >/dev/null 2>&1; then
  echo "Deleting the FederationCluster left by an earlier run"
  host -n $NS delete fc $FC --wait=true --timeout=120s >/dev/null
  for m in $KIND_MEMBERS; do member "$m" -n $NS delete pvc --all --wait=false >/dev/null 2>&1 || true; done
fi
fc v8.5.0 | host apply -f - >/dev/null
echo "       op       stage         pod                      Progressing"
watch_start
settled 300
watch_stop

bold "2/4 Upgrade: each pod drained, deleted, replaced, verified; tikv-0 unhealthy for 15s"
podget "$a" $FC-tikv-0 health/fail >/dev/null
echo "(GET /health/fail on $FC-tikv-0: its /health answers 500 until /health/pass)"
echo "       op       stage         pod                      Progressing"
watch_start
fc v8.5.1 | host apply -f - >/dev/null
# Once the gate stops tikv, it stays stopped 15s, then tikv-0 recovers.
for _ in $(seq 1 600); do
  [[ $(host -n $NS get fc $FC -o jsonpath='{.status.conditions[?(@.type=="Progressing")].reason}') == HealthCheckFailed ]] && break
  sleep 0.2
done
sleep 15
podget "$a" $FC-tikv-0 health/pass >/dev/null
settled 300
watch_stop

bold "3/4 What the pods were called (GET /calls; 'start' is each instance's start; /health calls left out)"
for key in "$a/$FC-pd-0" "$a/$FC-pd-1" "$b/$FC-pd-2" "$a/$FC-tikv-0" "$a/$FC-tikv-1" "$b/$FC-tikv-2"; do
  printf '  %-22s %s\n' "$key" "$(podget "${key%%/*}" "${key#*/}" calls | awk '$1 != "health" {print $1}' | tr '\n' ' ')"
done

bold "4/4 Events"
host -n $NS get events.events.k8s.io --field-selector regarding.name=$FC --sort-by=.metadata.creationTimestamp \
  -o custom-columns=REASON:.reason,NOTE:.note --no-headers | grep -E 'PodDrain|HealthCheck|PodReplaced|StepUndone|HookFailed' | cut -c1-150 | sed 's/^/  /'
cat <<EOF

Look around:
  kubectl --kubeconfig $host_kc -n $NS get fc $FC -o yaml
  kubectl --kubeconfig $(kind_kubeconfig "$a") get --raw /api/v1/namespaces/$NS/pods/$FC-pd-1:8080/proxy/calls
EOF
