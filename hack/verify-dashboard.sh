#!/usr/bin/env bash
# verify-dashboard.sh (`make verify-dashboard`) runs every query of the
# Grafana dashboard (config/grafana/dashboard.json) against real data: a lab
# of its own (DASHBOARD_LAB_DIR, default .lab/dashboard; host, k8s-a,
# k8s-b), fedop-manager built from the tree with its metrics served
# securely, Debian's Prometheus (the `prometheus` package, installed with
# apt if missing) scraping it over HTTPS with the token of a ServiceAccount
# bound to fedop-metrics-reader, as the ServiceMonitor of config/prometheus
# would, and the sample FederationCluster created and upgraded once.
#
# For each panel query it prints ok with the number of series, or FAIL
# when Prometheus rejects the query, when it names a metric the manager
# does not export, or when it returns nothing. When every query passed,
# hack/dashboard draws the dashboard from the same Prometheus over the run
# into DASHBOARD_PNG (default docs/dashboard.png; a relative path is from
# the repository's root): not Grafana, which cannot be built or installed
# on this project's machines (README, "Metrics"), and the image says so.
#
# The lab, the manager and Prometheus are stopped at the end; Prometheus's
# data stays in DASHBOARD_LAB_DIR/prometheus for a look with its own UI
# (prometheus --storage.tsdb.path=... --config.file=...).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export LAB_DIR=${DASHBOARD_LAB_DIR:-$ROOT/.lab/dashboard}
export MEMBERS="k8s-a k8s-b"
HOST_KC=$LAB_DIR/host.kubeconfig
DASHBOARD=$ROOT/config/grafana/dashboard.json
DASHBOARD_PNG=${DASHBOARD_PNG:-docs/dashboard.png}
# RATE_INTERVAL is what $__rate_interval stands for, in the checks and in
# the image; SCRAPE_INTERVAL Prometheus's, and the image's step.
RATE_INTERVAL=1m
SCRAPE_INTERVAL=2s
KUBECTL=$(kubectl_bin)
passed=0
failed=0
start=$SECONDS
prom_pid=""

host() { "$KUBECTL" --kubeconfig "$HOST_KC" "$@"; }

finish() {
  if [[ -n $prom_pid ]]; then
    kill "$prom_pid" 2>/dev/null
    wait "$prom_pid" 2>/dev/null
  fi
  stop_pidfile "$LAB_DIR/manager.pid" "$LAB_DIR/fedop-manager"
  "$ROOT/hack/lab.sh" down >/dev/null 2>&1 || echo "hack/lab.sh down failed; run LAB_DIR=$LAB_DIR hack/lab.sh down"
  echo "verify-dashboard took $((SECONDS - start))s"
  echo "verify-dashboard: $passed passed, $failed failed"
  ((failed == 0))
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! command -v prometheus >/dev/null; then
  log "Installing Debian's prometheus package"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; } >/dev/null || die "cannot install prometheus"
fi

log "== Lab (host, $MEMBERS) in $LAB_DIR"
"$ROOT/hack/lab.sh" down >/dev/null 2>&1
mkdir -p "$LAB_DIR"
"$ROOT/hack/lab.sh" up >"$LAB_DIR/up.log" 2>&1 || { cat "$LAB_DIR/up.log"; die "lab up failed"; }
host apply --server-side -k "$ROOT/config/crd" >/dev/null
wait_crd_established "$HOST_KC" federationclusters.fedop.io
host apply -f "$ROOT/config/rbac/metrics_reader_role.yaml" >/dev/null

log "== fedop-manager with secure metrics"
go build -ldflags "$(make_var MANAGER_LDFLAGS)" -o "$LAB_DIR/fedop-manager" "$ROOT/cmd/fedop-manager" || die "build failed"
(cd "$ROOT/hack/dashboard" && go build -o "$LAB_DIR/dashboard" .) || die "hack/dashboard: build failed"
mport=$(free_port 18543)
KUBECONFIG=$HOST_KC "$LAB_DIR/fedop-manager" --metrics-bind-address="127.0.0.1:$mport" --metrics-secure \
  --health-probe-bind-address=0 --member-probe-period=2s >"$LAB_DIR/manager.log" 2>&1 &
echo $! >"$LAB_DIR/manager.pid"

log "== Prometheus scraping it as ServiceAccount fedop-verify/scraper"
host create namespace fedop-verify >/dev/null
host -n fedop-verify create serviceaccount scraper >/dev/null
host create clusterrolebinding fedop-verify-scraper --clusterrole=fedop-metrics-reader --serviceaccount=fedop-verify:scraper >/dev/null
host -n fedop-verify create token scraper --duration=2h >"$LAB_DIR/scraper.token"
chmod 600 "$LAB_DIR/scraper.token"
pport=$(free_port $((mport + 1)))
rm -rf "$LAB_DIR/prometheus"
mkdir -p "$LAB_DIR/prometheus"
cat >"$LAB_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: $SCRAPE_INTERVAL
scrape_configs:
- job_name: fedop-manager
  scheme: https
  authorization:
    credentials_file: $LAB_DIR/scraper.token
  tls_config:
    insecure_skip_verify: true
  static_configs:
  - targets: ["127.0.0.1:$mport"]
EOF
prometheus --config.file="$LAB_DIR/prometheus.yml" --storage.tsdb.path="$LAB_DIR/prometheus" \
  --web.listen-address="127.0.0.1:$pport" >"$LAB_DIR/prometheus.log" 2>&1 &
prom_pid=$!
api=http://127.0.0.1:$pport/api/v1

target_up() {
  [[ $(curl -s "$api/query" --data-urlencode 'query=up{job="fedop-manager"}' | jq -r '.data.result[0].value[1]') == 1 ]]
}
check "Prometheus scrapes the manager over HTTPS with the scraper's token (up == 1)" poll 60 target_up
# The image covers the run from here: the manager connected, no sample yet.
window_start=$(date +%s)

log "== The sample FederationCluster, created and upgraded"
host apply -f "$ROOT/config/samples/fedop_v1alpha1_federationcluster.yaml" >/dev/null
# settled: the status describes the current generation, Ready, every pod
# updated.
settled() {
  local gens ready counts
  read -r gens ready counts < <(host get fc demo -o jsonpath='{.metadata.generation}/{.status.observedGeneration} {.status.conditions[?(@.type=="Ready")].status} {.status.updatedReplicas}/{.status.replicas}')
  [[ ${gens%/*} == "${gens#*/}" && $ready == True && -n ${counts%/*} && ${counts%/*} == "${counts#*/}" ]]
}
check "the sample becomes Ready" poll 120 settled
upgrade_tag=v8.5.1
patch='[{"op":"replace","path":"/spec/minReadySeconds","value":1}'
i=0
for image in $(host get fc demo -o jsonpath='{range .spec.components[*]}{.template.spec.containers[0].image}{" "}{end}'); do
  patch+=",{\"op\":\"replace\",\"path\":\"/spec/components/$i/template/spec/containers/0/image\",\"value\":\"${image%:*}:$upgrade_tag\"}"
  i=$((i + 1))
done
host patch fc demo --type=json -p "$patch]" >/dev/null
check "the upgrade of every pod completes" poll 240 settled
# Two more scrapes, so that the last step is in Prometheus.
sleep 5

log "== Dashboard queries (\$__rate_interval = $RATE_INTERVAL)"
exported=$(curl -s "$api/label/__name__/values" | jq -r '.data[]')
query_ok() {
  local expr=$1 res status n name missing=""
  res=$(curl -s "$api/query" --data-urlencode "query=$expr")
  status=$(jq -r .status <<<"$res")
  [[ $status == success ]] || { echo "     $(jq -r .error <<<"$res")"; return 1; }
  n=$(jq '.data.result | length' <<<"$res")
  for name in $(grep -oE '\b(fedop|controller_runtime|workqueue)_[a-z_]+' <<<"$expr" | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
    grep -qxE "${name}(_bucket)?" <<<"$exported" || missing+=" $name"
  done
  if [[ -n $missing ]]; then
    echo "     not exported:$missing"
    return 1
  fi
  ((n > 0)) || { echo "     no series"; return 1; }
  echo "     $n series"
}
while IFS=$'\t' read -r title expr; do
  out=$(query_ok "${expr//\$__rate_interval/$RATE_INTERVAL}")
  case $? in
    0) echo "ok   $title: $expr"; passed=$((passed + 1)) ;;
    *) echo "FAIL $title: $expr"; failed=$((failed + 1)) ;;
  esac
  echo "$out"
done < <(jq -r '.panels[] | select(.type != "row") | .title as $t | .targets[] | [$t, .expr] | @tsv' "$DASHBOARD")

# draw renders the dashboard from Prometheus's data of this run, from the
# repository's root so that the image names config/grafana/dashboard.json
# as such.
draw() {
  local commit
  commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  [[ -z $(git -C "$ROOT" status --porcelain -- ':!docs/dashboard.png' 2>/dev/null) ]] || commit+=" with local changes"
  (cd "$ROOT" && "$LAB_DIR/dashboard" -dashboard config/grafana/dashboard.json -prometheus "http://127.0.0.1:$pport" \
    -start "$window_start" -end "$(date +%s)" -step "$SCRAPE_INTERVAL" -rate-interval "$RATE_INTERVAL" -out "$DASHBOARD_PNG" \
    -note "hack/verify-dashboard.sh: a lab of its own (host, ${MEMBERS// /, }), fedop-manager at commit $commit scraped every $SCRAPE_INTERVAL; the sample FederationCluster created, then every pod upgraded to $upgrade_tag.") 2>&1 | sed 's/^/     /'
}
if ((failed == 0)); then
  log "== The dashboard, drawn by hack/dashboard into $DASHBOARD_PNG"
  check "hack/dashboard draws the dashboard into $DASHBOARD_PNG" draw
else
  echo "The dashboard is not drawn: $failed checks failed."
fi
