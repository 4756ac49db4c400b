#!/usr/bin/env bash
# check.sh (`make kind-check`) shows on the clusters hack/kind/up.sh made
# that what the lab promises the upcoming features works, each check
# printing "ok" or "FAIL", then a "N passed, N failed" line; it exits
# non-zero on any failure. Everything it creates is in namespace
# fedop-check of each cluster, deleted at the end.
#
#   - flat pod network: an HTTP server pod in the second member (busybox
#     httpd -vv, which logs each client's address) answers a client pod in
#     every other cluster at its pod IP, and logs the client's own pod IP
#     (nothing masqueraded it);
#   - storage, in every cluster: a claim of the default StorageClass
#     (standard, local-path-provisioner) binds when its pod is scheduled,
#     the pod writes to it and reads it back, and deleting the claim
#     deletes its PersistentVolume;
#   - the workload image in the first member, called the way fedop calls
#     pod hooks: through the member's API server (pods/proxy), as the
#     ServiceAccount register-member.sh made (impersonated): /token, the
#     hooks and /calls, /health failing and passing again; then the pod is
#     replaced and keeps its token and call log, which live on its claim.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUBECTL=$(kubectl_bin)
NS=fedop-check
FEDOP_SA=system:serviceaccount:fedop-system:fedop-member
read -r -a members <<<"$KIND_MEMBERS"
first=${members[0]}
second=${members[1]:-$first}
passed=0
failed=0

k() {
  local name=$1
  shift
  "$KUBECTL" --kubeconfig "$(kind_kubeconfig "$name")" --request-timeout=30s "$@"
}

cleanup() {
  local name
  for name in $KIND_HOST $KIND_MEMBERS; do
    k "$name" delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1
  done
}

finish() {
  cleanup
  echo "kind-check: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
trap finish EXIT

# image_in prints an image with busybox that cluster $1 has: the workload in
# members, the provisioner's image (it carries busybox for its helper pods)
# in the host.
image_in() {
  if [[ $1 == "$KIND_HOST" ]]; then storage_image; else echo "$WORKLOAD_REPO:v8.5.0"; fi
}

# run_pod creates pod $2 in cluster $1 running command "$3...", with the
# image image_in picks, restartPolicy Never, as user 65532.
run_pod() {
  local name=$1 pod=$2 cmd
  shift 2
  cmd=$(printf '"%s",' "$@")
  k "$name" -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $pod}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 65532, runAsGroup: 65532}
  containers:
  - name: main
    image: $(image_in "$name")
    imagePullPolicy: IfNotPresent
    command: [${cmd%,}]
EOF
}

# wait_succeeded waits up to 120s for pod $2 in cluster $1 to finish, and
# succeeds when it finished successfully.
wait_succeeded() {
  local i phase
  for ((i = 0; i < 240; i++)); do
    phase=$(k "$1" -n "$NS" get pod "$2" -o jsonpath='{.status.phase}')
    [[ $phase == Succeeded ]] && return 0
    [[ $phase == Failed ]] && break
    sleep 0.5
  done
  k "$1" -n "$NS" get pod "$2" -o wide
  k "$1" -n "$NS" logs "$2" 2>&1 | tail -n 5
  return 1
}

setup() {
  local name
  for name in $KIND_HOST $KIND_MEMBERS; do
    k "$name" delete namespace "$NS" --ignore-not-found --wait=true >/dev/null || return 1
    k "$name" create namespace "$NS" >/dev/null || return 1
  done
}

# --- Flat pod network

SERVER_IP=
network_server_up() {
  run_pod "$second" server /bin/busybox httpd -f -vv -p 8080 -h /www || return 1
  k "$second" -n "$NS" wait pod/server --for=condition=Ready --timeout=120s >/dev/null || return 1
  SERVER_IP=$(k "$second" -n "$NS" get pod server -o jsonpath='{.status.podIP}')
  echo "     server pod in $second at $SERVER_IP"
}

# reaches_by_pod_ip: a client pod in cluster $1 fetches the server's page
# at its pod IP, and the server logged the client's pod IP. The client
# speaks HTTP through nc: Debian's static busybox wget crashes (SIGSEGV) in
# an image without a C library, as glibc's static name service lookups do.
reaches_by_pod_ip() {
  local name=$1 pod=client-$1 body client_ip
  run_pod "$name" "$pod" /bin/busybox sh -c \
    "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 10 $SERVER_IP 8080" || return 1
  wait_succeeded "$name" "$pod" || return 1
  body=$(k "$name" -n "$NS" logs "$pod" | tail -n 1)
  [[ $body == "fedop e2e workload" ]] || { echo "     client got '$body'"; return 1; }
  client_ip=$(k "$name" -n "$NS" get pod "$pod" -o jsonpath='{.status.podIP}')
  k "$second" -n "$NS" logs server | grep -qF "$client_ip]" ||
    { echo "     the server did not see $client_ip: $(k "$second" -n "$NS" logs server | tail -n 2 | tr '\n' ' ')"; return 1; }
  echo "     $client_ip in $name -> $SERVER_IP in $second, seen as $client_ip"
}

# --- Storage

claim() {
  k "$1" -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $2}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
EOF
}

# pod_with_claim creates pod $2 in cluster $1 mounting claim $3 at /data;
# $4 is "wait" for a server (the workload, probed for readiness) or a shell
# command for a pod that runs once.
pod_with_claim() {
  local name=$1 pod=$2 claim=$3 what=$4 container
  if [[ $what == serve ]]; then
    container="image: $WORKLOAD_REPO:v8.5.0
    readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}"
  else
    container="image: $(image_in "$name")
    command: [/bin/busybox, sh, -c, '$what']"
  fi
  k "$name" -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $pod}
spec:
  restartPolicy: $([[ $what == serve ]] && echo Always || echo Never)
  securityContext: {runAsUser: 65532, runAsGroup: 65532}
  volumes: [{name: data, persistentVolumeClaim: {claimName: $claim}}]
  containers:
  - name: main
    imagePullPolicy: IfNotPresent
    volumeMounts: [{name: data, mountPath: /data}]
    $container
EOF
}

claim_binds_and_is_written() {
  local name=$1 phase sc out pv
  sc=$(k "$name" get storageclass -o jsonpath='{range .items[?(@.metadata.annotations.storageclass\.kubernetes\.io/is-default-class=="true")]}{.metadata.name}/{.provisioner}/{.volumeBindingMode}/{.reclaimPolicy}{"\n"}{end}')
  [[ $sc == standard/rancher.io/local-path/WaitForFirstConsumer/Delete ]] ||
    { echo "     default StorageClass: '$sc'"; return 1; }
  claim "$name" data || return 1
  phase=$(k "$name" -n "$NS" get pvc data -o jsonpath='{.status.phase}')
  [[ $phase == Pending ]] || { echo "     claim $phase before its pod (want Pending: WaitForFirstConsumer)"; return 1; }
  pod_with_claim "$name" writer data 'echo written-by-$(hostname) >/data/f && cat /data/f' || return 1
  wait_succeeded "$name" writer || return 1
  out=$(k "$name" -n "$NS" logs writer)
  [[ $out == written-by-writer ]] || { echo "     pod read '$out'"; return 1; }
  phase=$(k "$name" -n "$NS" get pvc data -o jsonpath='{.status.phase}')
  pv=$(k "$name" -n "$NS" get pvc data -o jsonpath='{.spec.volumeName}')
  [[ $phase == Bound && -n $pv ]] || { echo "     claim $phase, volume '$pv'"; return 1; }
  echo "     $name: claim Bound to $pv on $(k "$name" get pv "$pv" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}'), pod wrote and read /data/f"
  k "$name" -n "$NS" delete pod writer --wait=true >/dev/null || return 1
  k "$name" -n "$NS" delete pvc data --wait=true >/dev/null || return 1
  k "$name" wait "pv/$pv" --for=delete --timeout=120s >/dev/null || { echo "     $pv was not deleted"; return 1; }
}

# --- The workload through the API server, as fedop

# proxy prints the status code and body of GET /$2 on the workload pod in
# the first member, through the API server's pods/proxy as fedop's
# ServiceAccount: "<code> <body>", the body's lines joined by ";" (kubectl
# prints no body for an error status).
proxy() {
  local pod=$1 path=$2 out code body
  out=$(k "$first" --as="$FEDOP_SA" get --raw "/api/v1/namespaces/$NS/pods/$pod:8080/proxy/$path" -v=6 2>&1)
  code=$(grep -oE '"Response" verb="GET" url="[^"]*" status="[0-9]+' <<<"$out" | grep -oE '[0-9]+$' | tail -n 1)
  [[ -n $code ]] || code=$(grep -oE 'GET https://[^ ]+ ([0-9]{3})' <<<"$out" | grep -oE '[0-9]{3}$' | tail -n 1)
  body=$(grep -vE '^I[0-9]{4} |^Error from server' <<<"$out" | tr '\n' ';')
  echo "$code ${body%;}"
}

# expect_proxy checks that GET /$2 on pod $1 answers code $3 and, when $4
# is given, a body matching the extended regular expression $4.
expect_proxy() {
  local got
  got=$(proxy "$1" "$2")
  if [[ ${got%% *} != "$3" ]] || { [[ -n ${4:-} ]] && ! grep -qE "$4" <<<"${got#* }"; }; then
    echo "     GET /$2: '$got', want $3 ${4:-}"
    return 1
  fi
}

TOKEN=
workload_serves_hooks() {
  local rbac calls
  for rbac in "get pods/proxy" "create endpointslices.discovery.k8s.io" "delete endpointslices.discovery.k8s.io"; do
    # shellcheck disable=SC2086 # verb and resource
    [[ $(k "$first" auth can-i $rbac -n "$NS" --as="$FEDOP_SA") == yes ]] ||
      { echo "     fedop's ServiceAccount cannot $rbac"; return 1; }
  done
  claim "$first" hooks || return 1
  pod_with_claim "$first" hooks hooks serve || return 1
  k "$first" -n "$NS" wait pod/hooks --for=condition=Ready --timeout=120s >/dev/null || return 1
  TOKEN=$(proxy hooks token)
  [[ $TOKEN =~ ^200\ [0-9a-f]{32}$ ]] || { echo "     GET /token: '$TOKEN'"; return 1; }
  TOKEN=${TOKEN#200 }
  expect_proxy hooks drain 200 '^drain$' &&
    expect_proxy hooks undrain 200 '^undrain$' &&
    expect_proxy hooks health 200 '^healthy$' &&
    expect_proxy hooks health/fail 200 &&
    expect_proxy hooks health 500 &&
    expect_proxy hooks health/pass 200 &&
    expect_proxy hooks health 200 '^healthy$' &&
    expect_proxy hooks nope 404 || return 1
  calls=$(proxy hooks calls)
  [[ $calls =~ ^200\ start\ [0-9]+\ hooks\;drain\ [0-9]+\ hooks\;undrain\ [0-9]+\ hooks(\;health\ [0-9]+\ hooks){3}$ ]] ||
    { echo "     GET /calls: '$calls'"; return 1; }
  echo "     token $TOKEN; calls: ${calls#200 }"
}

# replaced_pod_keeps_token: a new pod of the same claim (its name is new,
# so its hostname tells the log's lines apart) serves the same token and
# the old call log, and logs its own calls under its own name.
replaced_pod_keeps_token() {
  local token calls
  k "$first" -n "$NS" delete pod hooks --wait=true >/dev/null || return 1
  pod_with_claim "$first" hooks-2 hooks serve || return 1
  k "$first" -n "$NS" wait pod/hooks-2 --for=condition=Ready --timeout=120s >/dev/null || return 1
  token=$(proxy hooks-2 token)
  [[ $token == "200 $TOKEN" ]] || { echo "     GET /token: '$token', want '200 $TOKEN'"; return 1; }
  expect_proxy hooks-2 drain 200 || return 1
  calls=$(proxy hooks-2 calls)
  [[ $calls =~ ^200\ start\ [0-9]+\ hooks\;.*\;start\ [0-9]+\ hooks-2\;drain\ [0-9]+\ hooks-2$ ]] || { echo "     GET /calls: '$calls'"; return 1; }
  echo "     hooks-2 serves token ${token#200 } and the log: ${calls#200 }"
}

no_volume_no_token() {
  run_pod "$first" plain /bin/busybox sh /run.sh || return 1
  # run.sh serves; a readiness probe is not needed to call it once Running.
  k "$first" -n "$NS" wait pod/plain --for=jsonpath='{.status.phase}'=Running --timeout=120s >/dev/null || return 1
  poll 10 expect_proxy plain "" 200 || return 1
  expect_proxy plain token 404 && expect_proxy plain drain 200 &&
    expect_proxy plain calls 200 "^start [0-9]+ plain;drain [0-9]+ plain$"
}

for kc in $(for n in $KIND_HOST $KIND_MEMBERS; do kind_kubeconfig "$n"; done); do
  [[ -f $kc ]] || die "$kc is missing: run 'make kind-up' first"
done
check "namespace $NS in every cluster" setup || exit 1
if check "HTTP server pod in $second" network_server_up; then
  for name in $KIND_HOST $KIND_MEMBERS; do
    [[ $name == "$second" ]] && continue
    check "flat pod network: a pod in $name reaches the server in $second by pod IP, unmasqueraded" reaches_by_pod_ip "$name"
  done
fi
for name in $KIND_HOST $KIND_MEMBERS; do
  check "storage in $name: a claim of StorageClass standard binds, is written, and its volume is deleted with it" \
    claim_binds_and_is_written "$name"
done
if check "workload in $first through pods/proxy as fedop: /token, hooks, /calls, /health 500 and back" workload_serves_hooks; then
  check "workload: a replacement pod on the same claim keeps the token and the call log" replaced_pod_keeps_token
fi
check "workload without a volume: /token 404, hooks logged in /tmp" no_volume_no_token
