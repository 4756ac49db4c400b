#!/usr/bin/env bash
# verify-installer.sh (`make verify-installer`, run by CI) checks the
# install path a user takes, on a lab of its own (INSTALLER_LAB_DIR, default
# .lab/installer; host, k8s-a and k8s-b), and takes the lab down at the end:
#
#   1. `make build-installer` renders dist/install.yaml, holding exactly the
#      objects the README promises, with the image asked for; the root
#      Dockerfile copies every directory the manager is built from;
#   2. the installer applies to the lab host with a server-side dry run,
#      then for real;
#   3. the manager it describes starts: the lab host has no nodes to run
#      the Deployment's pod on, so fedop-manager, built from the tree and
#      stamped like `make build`, runs here with the Deployment's own
#      arguments, as the Deployment's ServiceAccount (a token from the
#      TokenRequest API) and so with nothing but the installer's RBAC. Only
#      the two bind addresses are moved to free ports on 127.0.0.1, so that
#      it cannot collide with other labs on the machine. It must log its
#      version, answer the Deployment's liveness and readiness probes, take
#      the leader Lease, start its workers, connect both members, and run
#      the sample FederationCluster to Ready;
#   4. its metrics are served securely: a ServiceAccount bound to
#      fedop-metrics-reader gets 200, one that is not gets 403, no token
#      gets 401, plain HTTP gets nothing;
#   5. fedop-viewer and fedop-editor are aggregated into view and edit;
#   6. `make undeploy` deletes the FederationCluster (its pods leave the
#      members) and then everything the installer created.
#
# Prints "ok"/"FAIL" per check and a closing "N passed, N failed" line;
# exits non-zero on any failure. IMG names the image written into the
# installer (default fedop.local/fedop-manager:verify; nothing pulls it).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The Makefile exports LAB_DIR (the developer's lab): never use it here.
export LAB_DIR=${INSTALLER_LAB_DIR:-$ROOT/.lab/installer}
export MEMBERS="k8s-a k8s-b"
IMG=${IMG:-fedop.local/fedop-manager:verify}
HOST_KC=$LAB_DIR/host.kubeconfig
SA_KC=$LAB_DIR/fedop-manager-sa.kubeconfig
INSTALLER=$ROOT/dist/install.yaml
NS=fedop-system
# A namespace of the check's own, for the scraper's and the users'
# ServiceAccounts.
CHECK_NS=fedop-verify
KUBECTL=$(kubectl_bin)
passed=0
failed=0
start=$SECONDS

host() { "$KUBECTL" --kubeconfig "$HOST_KC" "$@"; }

finish() {
  stop_manager
  "$ROOT/hack/lab.sh" down >/dev/null 2>&1 || echo "hack/lab.sh down failed; run LAB_DIR=$LAB_DIR hack/lab.sh down"
  if ((failed > 0)) && [[ -f $LAB_DIR/manager.log ]]; then
    echo "--- last 30 lines of $LAB_DIR/manager.log"
    tail -n 30 "$LAB_DIR/manager.log"
  fi
  echo "verify-installer took $((SECONDS - start))s"
  echo "verify-installer: $passed passed, $failed failed"
  ((failed == 0))
}

stop_manager() { stop_pidfile "$LAB_DIR/manager.pid" "$LAB_DIR/fedop-manager"; }

# --- 1. The installer

installer_objects() {
  local want got
  want=$(sort <<'EOF'
clusterrole.rbac.authorization.k8s.io/fedop-editor
clusterrole.rbac.authorization.k8s.io/fedop-manager
clusterrole.rbac.authorization.k8s.io/fedop-metrics-auth
clusterrole.rbac.authorization.k8s.io/fedop-metrics-reader
clusterrole.rbac.authorization.k8s.io/fedop-viewer
clusterrolebinding.rbac.authorization.k8s.io/fedop-manager
clusterrolebinding.rbac.authorization.k8s.io/fedop-metrics-auth
customresourcedefinition.apiextensions.k8s.io/federationclusters.fedop.io
deployment.apps/fedop-manager
namespace/fedop-system
role.rbac.authorization.k8s.io/fedop-manager
rolebinding.rbac.authorization.k8s.io/fedop-manager
service/fedop-manager-metrics
serviceaccount/fedop-manager
EOF
  )
  # kind and name of every document, as kubectl names them.
  got=$(awk '
    /^---/ { kind = ""; name = ""; group = ""; meta = 0; next }
    /^apiVersion:/ { group = $2; sub(/\/?v[0-9a-z]+$/, "", group) }
    /^kind:/ { kind = tolower($2) }
    /^metadata:/ { meta = 1; next }
    meta && /^  name:/ { name = $2; meta = 0; print kind (group == "" ? "" : "." group) "/" name }
    /^[a-z]/ && !/^metadata:/ { meta = 0 }
  ' "$INSTALLER" | sort)
  [[ $got == "$want" ]] || { diff <(echo "$want") <(echo "$got") | sed 's/^/     /'; return 1; }
}

installer_image() {
  local images
  images=$(awk '/^kind: Deployment/ { d = 1 } d && /^ *image:/ { print $2 }' "$INSTALLER")
  [[ $images == "$IMG" ]] || { echo "     Deployment image(s): $images"; return 1; }
}

# dockerfile_copies_sources: the root Dockerfile copies directories one by
# one; a package the manager imports from a directory it does not copy
# would break `make docker-build`, which CI cannot run offline.
dockerfile_copies_sources() {
  local dirs d missing=""
  dirs=$(cd "$ROOT" && go list -deps -f '{{with .Module}}{{if eq .Path "github.com/fedop-io/fedop"}}{{$.Dir}}{{end}}{{end}}' ./cmd/fedop-manager |
    sed "s|^$ROOT/||" | cut -d/ -f1 | sort -u)
  for d in $dirs; do
    grep -qE "^COPY $d/ $d/\$" "$ROOT/Dockerfile" || missing+=" $d"
    grep -qxF "!$d/**/*.go" "$ROOT/.dockerignore" || missing+=" $d(.dockerignore)"
  done
  [[ -z $missing ]] || { echo "     not copied:$missing"; return 1; }
}

# --- 2. Applying it

dry_run() {
  local out
  out=$(host apply --server-side --dry-run=server -f "$INSTALLER" 2>&1) || { echo "$out" | sed 's/^/     /'; return 1; }
}

apply_installer() {
  local out
  out=$(host apply --server-side -f "$INSTALLER" 2>&1) || { echo "$out" | sed 's/^/     /'; return 1; }
  wait_crd_established "$HOST_KC" federationclusters.fedop.io
  # The lab host has no nodes: the Deployment's pod would stay Pending.
  # The binary runs in its place (below).
  host -n $NS scale deployment/fedop-manager --replicas=0 >/dev/null
}

# --- 3. The manager it describes

# deployment_field prints a jsonpath of the installed Deployment's first
# container.
deployment_field() {
  host -n $NS get deployment fedop-manager -o jsonpath="{.spec.template.spec.containers[0]$1}"
}

# sa_kubeconfig writes a kubeconfig for the host as the Deployment's
# ServiceAccount, with a token from the TokenRequest API.
sa_kubeconfig() {
  local sa server ca token
  sa=$(host -n $NS get deployment fedop-manager -o jsonpath='{.spec.template.spec.serviceAccountName}')
  server=$(host config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(host config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  token=$(host -n $NS create token "$sa" --duration=1h) || return 1
  cat >"$SA_KC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: host
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: $sa
  user: {token: "$token"}
contexts:
- name: $sa
  context: {cluster: host, user: $sa, namespace: $NS}
current-context: $sa
EOF
  chmod 600 "$SA_KC"
}

build_manager() {
  go build -ldflags "$(make_var MANAGER_LDFLAGS)" -o "$LAB_DIR/fedop-manager" "$ROOT/cmd/fedop-manager"
}

version_printed() {
  local want out
  want="fedop-manager $(make_var VERSION) (commit $(make_var COMMIT),"
  out=$("$LAB_DIR/fedop-manager" --version)
  [[ $out == "$want"* ]] || { echo "     printed '$out', want '$want ...'"; return 1; }
}

# metrics_port_consistent: the port the Deployment's args bind metrics to
# is its container port "https", which the metrics Service targets.
metrics_port_consistent() {
  local bind port target
  bind=$(deployment_field '.args' | jq -r '.[]' | grep -- '^--metrics-bind-address=')
  port=$(deployment_field '.ports[?(@.name=="https")].containerPort')
  target=$(host -n $NS get service fedop-manager-metrics -o jsonpath='{.spec.ports[0].targetPort}')
  [[ ${bind##*:} == "$port" && $target == https ]] ||
    { echo "     args $bind, container port https=$port, Service targetPort $target"; return 1; }
}

start_manager() {
  local arg
  MPORT=$(free_port 18443)
  HPORT=$(free_port $((MPORT + 1)))
  args=()
  while IFS= read -r arg; do
    case $arg in
      --metrics-bind-address=*) arg=--metrics-bind-address=127.0.0.1:$MPORT ;;
      --health-probe-bind-address=*) arg=--health-probe-bind-address=127.0.0.1:$HPORT ;;
    esac
    args+=("$arg")
  done < <(deployment_field '.args' | jq -r '.[]')
  echo "     fedop-manager ${args[*]}"
  KUBECONFIG=$SA_KC "$LAB_DIR/fedop-manager" "${args[@]}" >"$LAB_DIR/manager.log" 2>&1 &
  # hack/lab.sh down stops it too, should this script be interrupted.
  echo $! >"$LAB_DIR/manager.pid"
}

http_status() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"
}

answers_200() { [[ $(http_status "$1") == 200 ]]; }

probe_ok() {
  local path port
  path=$(deployment_field ".$1.httpGet.path")
  port=$(deployment_field ".$1.httpGet.port")
  [[ $port == health && -n $path ]] || { echo "     $1: path '$path' port '$port'"; return 1; }
  poll 60 answers_200 "http://127.0.0.1:$HPORT$path" ||
    { echo "     GET $path: $(http_status "http://127.0.0.1:$HPORT$path")"; return 1; }
}

logs_version() {
  grep -q "\"Starting fedop-manager\".*\"version\":\"$(make_var VERSION)\"" "$LAB_DIR/manager.log"
}

lease_held() {
  [[ -n $(host -n $NS get lease fedop-manager.fedop.io -o jsonpath='{.spec.holderIdentity}') ]]
}

workers_started() {
  grep -q '"Starting workers".*"federationcluster"' "$LAB_DIR/manager.log"
}

nothing_forbidden() {
  local lines
  lines=$(grep -i 'forbidden' "$LAB_DIR/manager.log" | head -n 3)
  [[ -z $lines ]] || { sed 's/^/     /' <<<"$lines"; return 1; }
}

# --- 4. Secure metrics

token_of() {
  host -n $CHECK_NS create token "$1" --duration=10m
}

scrape() {
  http_status -k "https://127.0.0.1:$MPORT/metrics" "$@"
}

users() {
  host create namespace $CHECK_NS >/dev/null &&
    host -n $CHECK_NS create serviceaccount scraper >/dev/null &&
    host -n $CHECK_NS create serviceaccount stranger >/dev/null &&
    host -n $CHECK_NS create serviceaccount viewer >/dev/null &&
    host -n $CHECK_NS create serviceaccount editor >/dev/null &&
    host create clusterrolebinding fedop-verify-scraper --clusterrole=fedop-metrics-reader \
      --serviceaccount=$CHECK_NS:scraper >/dev/null &&
    host -n default create rolebinding fedop-verify-viewer --clusterrole=view --serviceaccount=$CHECK_NS:viewer >/dev/null &&
    host -n default create rolebinding fedop-verify-editor --clusterrole=edit --serviceaccount=$CHECK_NS:editor >/dev/null
}

authorized_scrape() {
  local body
  body=$(curl -sk --max-time 5 -H "Authorization: Bearer $(token_of scraper)" "https://127.0.0.1:$MPORT/metrics") || return 1
  grep -q '^fedop_member_connected' <<<"$body" || { echo "     no fedop_member_connected in the scrape"; return 1; }
}

scrape_is() {
  local want=$1 got
  shift
  got=$(scrape "$@")
  [[ $got == "$want" ]] || { echo "     got HTTP $got"; return 1; }
}

plain_http_refused() {
  [[ $(http_status "http://127.0.0.1:$MPORT/metrics") != 200 ]]
}

# members_connected: the manager, with the installer's RBAC, read both
# member Secrets and connected to both members (its own metrics say so).
members_connected() {
  local body m
  body=$(curl -sk --max-time 5 -H "Authorization: Bearer $(token_of scraper)" "https://127.0.0.1:$MPORT/metrics")
  for m in $MEMBERS; do
    grep -qE "^fedop_member_connected\{member=\"$m\"\} 1\$" <<<"$body" || return 1
  done
}

demo_ready() {
  [[ $(host get fc demo -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

sample_ready() {
  host apply -f "$ROOT/config/samples/fedop_v1alpha1_federationcluster.yaml" >/dev/null || return 1
  poll 120 demo_ready ||
    { host get fc demo -o wide | sed 's/^/     /'; return 1; }
}

# --- 5. Aggregated roles

can_i() {
  local sa=$1 want=$2 got
  shift 2
  got=$(host auth can-i "$@" -n default --as=system:serviceaccount:$CHECK_NS:"$sa" 2>/dev/null)
  [[ $got == "$want" ]] || { echo "     $sa: can-i $*: $got"; return 1; }
}

# --- 6. Uninstall

undeploy() {
  KUBECONFIG=$HOST_KC UNDEPLOY_TIMEOUT=120s "$ROOT/hack/undeploy.sh" "$IMG" >"$LAB_DIR/undeploy.log" 2>&1 ||
    { tail -n 5 "$LAB_DIR/undeploy.log" | sed 's/^/     /'; return 1; }
}

members_have_no_fedop_pods() {
  local m n
  for m in $MEMBERS; do
    n=$("$KUBECTL" --kubeconfig "$LAB_DIR/$m.kubeconfig" get pods -A -l app.kubernetes.io/managed-by=fedop -o name | wc -l)
    ((n == 0)) || { echo "     $m still has $n of fedop's pods"; return 1; }
  done
}

namespace_gone() { ! host get namespace $NS; }

nothing_left() {
  local left
  left=$(host get crd,clusterrole,clusterrolebinding -o name | grep -E 'fedop\.io|/fedop-(manager|metrics|viewer|editor)' || true)
  poll 60 namespace_gone || left+=" namespace/$NS"
  [[ -z ${left// /} ]] || { echo "     left: $left"; return 1; }
}

trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "== 1. Installer for $IMG"
require_bins etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl kubectl
make -s -C "$ROOT" build-installer IMG="$IMG" >/dev/null || die "make build-installer failed"
check "dist/install.yaml holds the CRD, namespace, RBAC, Deployment and metrics Service" installer_objects
check "the Deployment runs IMG ($IMG)" installer_image
check "the Dockerfile copies every directory fedop-manager is built from" dockerfile_copies_sources

log "== Lab (host, $MEMBERS) in $LAB_DIR"
"$ROOT/hack/lab.sh" down >/dev/null 2>&1
mkdir -p "$LAB_DIR"
"$ROOT/hack/lab.sh" up >"$LAB_DIR/up.log" 2>&1 || { cat "$LAB_DIR/up.log"; die "lab up failed"; }

log "== 2. Apply"
check "kubectl apply --server-side --dry-run=server -f dist/install.yaml" dry_run
check "kubectl apply --server-side -f dist/install.yaml" apply_installer || exit 1

log "== 3. The manager, with the Deployment's args and ServiceAccount"
build_manager || die "building fedop-manager failed"
check "fedop-manager --version prints the Makefile's VERSION and COMMIT" version_printed
check "metrics: --metrics-bind-address port = container port https = Service targetPort" metrics_port_consistent
sa_kubeconfig || die "cannot mint a token for the Deployment's ServiceAccount"
start_manager
check "answers its livenessProbe" probe_ok livenessProbe
check "answers its readinessProbe" probe_ok readinessProbe
check "logs its version at start" logs_version
check "takes the leader Lease" poll 60 lease_held
check "starts its FederationCluster workers (caches synced with the installer's RBAC)" poll 60 workers_started

log "== 4. Secure metrics"
users || die "cannot create the check's ServiceAccounts"
check "a ServiceAccount bound to fedop-metrics-reader scrapes /metrics (HTTPS, 200)" authorized_scrape
check "a ServiceAccount without it gets 403" scrape_is 403 -H "Authorization: Bearer $(token_of stranger)"
check "no token gets 401" scrape_is 401
check "plain HTTP gets no metrics" plain_http_refused
check "every member connected (fedop_member_connected 1)" poll 60 members_connected
check "the sample FederationCluster becomes Ready" sample_ready
check "no request of the manager was forbidden" nothing_forbidden

log "== 5. Aggregated roles"
check "view grants get on FederationClusters (fedop-viewer)" can_i viewer yes get federationclusters.fedop.io
check "view grants no create" can_i viewer no create federationclusters.fedop.io
check "edit grants create on FederationClusters (fedop-editor)" can_i editor yes create federationclusters.fedop.io

log "== 6. Uninstall"
check "make undeploy deletes the FederationCluster, then the installer's objects" undeploy
check "the members have no pods of fedop left" members_have_no_fedop_pods
check "no CRD, ClusterRole, binding or namespace of fedop is left" nothing_left
