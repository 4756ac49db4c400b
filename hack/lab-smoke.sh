#!/usr/bin/env bash
# lab-smoke.sh brings up a lab of its own (under LAB_DIR, default
# .lab/smoke, so a developer's lab in .lab is left alone), checks what the lab
# promises, and takes it down again. Every check prints "ok" or "FAIL"; the
# script ends with a "N passed, N failed" line and exits non-zero on any
# failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export LAB_DIR=${SMOKE_LAB_DIR:-$ROOT/.lab/smoke}
export MEMBERS=${MEMBERS:-k8s-a k8s-b}
KUBECTL=$(kubectl_bin)
passed=0
failed=0

finish() {
  "$ROOT/hack/lab.sh" down >/dev/null 2>&1
  check "lab-down leaves no etcd, kube-* or kwok process" no_lab_process
  echo "lab-smoke: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

no_lab_process() {
  ! pgrep -f -- "$LAB_DIR/kwok/" >/dev/null
}

host() { "$KUBECTL" --kubeconfig "$LAB_DIR/host.kubeconfig" "$@"; }

lab_up() {
  local start=$SECONDS
  "$ROOT/hack/lab.sh" up || return 1
  echo "     (lab up in $((SECONDS - start))s)"
}

secrets_listed() {
  local got want
  got=$(host -n fedop-system get secrets -l fedop.io/member-cluster=true -o name | sort | tr '\n' ' ')
  want=$(for m in $MEMBERS; do echo "secret/$m"; done | sort | tr '\n' ' ')
  [[ $got == "$want" ]] || { echo "     secrets: '$got', want '$want'"; return 1; }
}

# member_kc writes the kubeconfig held in member $1's Secret to a file and
# prints its path: the credentials the operator will use.
member_kc() {
  local f=$LAB_DIR/$1.from-secret.kubeconfig
  host -n fedop-system get secret "$1" -o jsonpath='{.data.kubeconfig}' | base64 -d >"$f"
  echo "$f"
}

can_i() {
  local kc=$1 want=$2
  shift 2
  local got
  got=$("$KUBECTL" --kubeconfig "$kc" auth can-i "$@" 2>/dev/null)
  [[ $got == "$want" ]] || { echo "     can-i $*: '$got', want '$want'"; return 1; }
}

pod_lands_in_zone() {
  local kc=$LAB_DIR/${MEMBERS%% *}.kubeconfig zone=b
  "$KUBECTL" --kubeconfig "$kc" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: smoke, namespace: default}
spec:
  nodeSelector: {topology.kubernetes.io/zone: $zone}
  containers: [{name: main, image: registry.example/none:1}]
EOF
  "$KUBECTL" --kubeconfig "$kc" wait pod/smoke --for=condition=Ready --timeout=60s >/dev/null || return 1
  local node node_zone
  node=$("$KUBECTL" --kubeconfig "$kc" get pod smoke -o jsonpath='{.spec.nodeName}')
  node_zone=$("$KUBECTL" --kubeconfig "$kc" get node "$node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')
  [[ $node_zone == "$zone" ]] || { echo "     pod on $node in zone '$node_zone', want '$zone'"; return 1; }
}

# member_pod_ips_differ: a pod in each member gets an IP from that member's
# own pod CIDR (hack/lib.sh pod_cidr), so no two members share pod IPs.
member_pod_ips_differ() {
  local m kc pos ip want ips=()
  for m in $MEMBERS; do
    kc=$LAB_DIR/$m.kubeconfig
    "$KUBECTL" --kubeconfig "$kc" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: smoke-ip, namespace: default}
spec:
  containers: [{name: main, image: registry.example/none:1}]
EOF
  done
  for m in $MEMBERS; do
    kc=$LAB_DIR/$m.kubeconfig
    "$KUBECTL" --kubeconfig "$kc" wait pod/smoke-ip --for=condition=Ready --timeout=60s >/dev/null || return 1
    ip=$("$KUBECTL" --kubeconfig "$kc" get pod smoke-ip -o jsonpath='{.status.podIP}')
    # shellcheck disable=SC2086 # one member per word
    pos=$(cluster_position "$m" host $MEMBERS)
    want=$(pod_cidr "$pos")
    want=${want%.0.0/16}.
    [[ $ip == "$want"* ]] || { echo "     $m: pod IP '$ip', want one in $(pod_cidr "$pos")"; return 1; }
    ips+=("$m=$ip")
  done
  echo "     ${ips[*]}"
}

# claim_binds: a claim of the default StorageClass stays Pending until a pod
# uses it, then is Bound to a volume with node affinity to the pod's node,
# the pod becomes Ready, and deleting pod and claim deletes the volume.
claim_binds() {
  local kc=$LAB_DIR/${MEMBERS%% *}.kubeconfig phase pv node pv_node
  k() { "$KUBECTL" --kubeconfig "$kc" "$@"; }
  k apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: smoke-data, namespace: default}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
EOF
  phase=$(k get pvc smoke-data -o jsonpath='{.status.phase}')
  [[ $phase == Pending ]] || { echo "     claim $phase before its pod, want Pending"; return 1; }
  k apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: smoke-data, namespace: default}
spec:
  volumes: [{name: data, persistentVolumeClaim: {claimName: smoke-data}}]
  containers: [{name: main, image: registry.example/none:1, volumeMounts: [{name: data, mountPath: /data}]}]
EOF
  k wait pod/smoke-data --for=condition=Ready --timeout=60s >/dev/null || return 1
  phase=$(k get pvc smoke-data -o jsonpath='{.status.phase}')
  pv=$(k get pvc smoke-data -o jsonpath='{.spec.volumeName}')
  node=$(k get pod smoke-data -o jsonpath='{.spec.nodeName}')
  pv_node=$(k get pv "$pv" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')
  [[ $phase == Bound && -n $node && $pv_node == "$node" ]] ||
    { echo "     claim $phase to '$pv' (node '$pv_node'), pod on '$node'"; return 1; }
  echo "     claim Bound to $pv on $node"
  k delete pod smoke-data --wait=true >/dev/null && k delete pvc smoke-data --wait=true >/dev/null || return 1
  k wait "pv/$pv" --for=delete --timeout=60s >/dev/null || { echo "     $pv was not deleted with its claim"; return 1; }
}

host_state() {
  host get namespaces,secrets -A -o name | sort
}

# register_fails runs register-member.sh with the given flags and succeeds
# when it fails with an "error:" message and leaves the host as it was.
register_fails() {
  local before after out
  before=$(host_state)
  if out=$("$ROOT/hack/register-member.sh" "$@" 2>&1); then
    echo "     register-member.sh $* succeeded"
    return 1
  fi
  grep -q '^error: ' <<<"$out" || { echo "     no error message: $out"; return 1; }
  echo "     ${out##*$'\n'}"
  after=$(host_state)
  [[ $before == "$after" ]] || { echo "     the host changed"; return 1; }
}

unreachable_kubeconfig() {
  local f=$LAB_DIR/unreachable.kubeconfig
  "$KUBECTL" config --kubeconfig "$f" set-cluster x --server https://127.0.0.1:1 >/dev/null
  "$KUBECTL" config --kubeconfig "$f" set-context x --cluster x >/dev/null
  "$KUBECTL" config --kubeconfig "$f" use-context x >/dev/null
  echo "$f"
}

lab_up_again_is_quick() {
  local start=$SECONDS
  "$ROOT/hack/lab.sh" up >/dev/null 2>&1 || return 1
  echo "     (second lab up in $((SECONDS - start))s)"
}

secret_token() {
  host -n fedop-system get secret "$1" -o jsonpath='{.data.kubeconfig}' | base64 -d |
    "$KUBECTL" config view --kubeconfig /dev/stdin --raw -o jsonpath='{.users[0].user.token}'
}

reregister() {
  "$ROOT/hack/register-member.sh" --host-kubeconfig "$LAB_DIR/host.kubeconfig" \
    --member-kubeconfig "$LAB_DIR/$1.kubeconfig" --name "$1" "${@:2}" 2>/dev/null
}

# rotation_keeps_old_token: a plain re-run writes a new token to the Secret;
# the old one keeps working until it expires.
rotation_keeps_old_token() {
  local m=$1 old_kc=$LAB_DIR/$1.old.kubeconfig old new
  cp "$(member_kc "$m")" "$old_kc"
  old=$(secret_token "$m")
  reregister "$m" || return 1
  new=$(secret_token "$m")
  [[ -n $new && $new != "$old" ]] || { echo "     token did not change"; return 1; }
  can_i "$old_kc" yes create pods -n default
}

# revoke_invalidates_old_token: --revoke-old-tokens recreates the
# ServiceAccount, so a token minted before stops working and the new one works.
revoke_invalidates_old_token() {
  local m=$1 old_kc=$LAB_DIR/$1.old.kubeconfig
  cp "$(member_kc "$m")" "$old_kc"
  reregister "$m" --revoke-old-tokens || return 1
  ! "$KUBECTL" --kubeconfig "$old_kc" auth can-i create pods -n default >/dev/null 2>&1 ||
    { echo "     the old token still works"; return 1; }
  can_i "$(member_kc "$m")" yes create pods -n default
}

trap finish EXIT
"$ROOT/hack/lab.sh" down >/dev/null 2>&1
check "lab-up creates host and members ($MEMBERS)" lab_up || exit 1
check "host lists a member Secret for every member" secrets_listed
first=${MEMBERS%% *}
kc=$(member_kc "$first")
check "member credentials: can create pods in default" can_i "$kc" yes create pods -n default
check "member credentials: cannot get secrets in kube-system" can_i "$kc" no get secrets -n kube-system
check "member credentials: can write EndpointSlices in default" can_i "$kc" yes patch endpointslices.discovery.k8s.io -n default
check "member credentials: can call pods through the API server (pods/proxy)" can_i "$kc" yes get pods/proxy -n default
check "member credentials: can delete Endpoints (left by a Service fedop made selector-less)" can_i "$kc" yes delete endpoints -n default
check "a pod with a zone node selector lands on a matching node and becomes Ready" pod_lands_in_zone
check "pod IPs differ between members (each member's own pod CIDR)" member_pod_ips_differ
check "a claim of StorageClass standard binds on its pod's node; its volume goes with it" claim_binds
check "register-member: missing member kubeconfig fails, host unchanged" \
  register_fails --host-kubeconfig "$LAB_DIR/host.kubeconfig" --member-kubeconfig "$LAB_DIR/nope.kubeconfig" --name bad
check "register-member: unreachable member fails, host unchanged" \
  register_fails --host-kubeconfig "$LAB_DIR/host.kubeconfig" --member-kubeconfig "$(unreachable_kubeconfig)" --name bad
check "register-member: invalid name fails, host unchanged" \
  register_fails --host-kubeconfig "$LAB_DIR/host.kubeconfig" --member-kubeconfig "$LAB_DIR/$first.kubeconfig" --name Bad_Name
check "register-member again rotates the token in the Secret" rotation_keeps_old_token "$first"
check "register-member --revoke-old-tokens invalidates the old token" revoke_invalidates_old_token "$first"
check "lab-up again is idempotent" lab_up_again_is_quick
check "host still lists exactly the member Secrets" secrets_listed
