#!/usr/bin/env bash
# register-member.sh registers a member cluster with fedop's host cluster,
# doing what a user would do by hand:
#
#   1. In the member: namespace fedop-system, ServiceAccount fedop-member, and
#      a ClusterRole (bound to it) holding only what fedop needs there.
#   2. A token for that ServiceAccount from the TokenRequest API, and a
#      kubeconfig with the server, CA data and token inline (no file
#      references, no exec plugin: fedop refuses those by default).
#   3. On the host: Secret <name> in namespace fedop-system, labelled
#      fedop.io/member-cluster=true, with the kubeconfig in data key
#      "kubeconfig". This is the format fedop-manager reads.
#
# Running it again mints a new token and updates the Secret (rotation). With
# --revoke-old-tokens it first recreates the ServiceAccount, which makes every
# token minted before invalid.
#
# Usage:
#   hack/register-member.sh --host-kubeconfig PATH --member-kubeconfig PATH \
#     --name NAME [--server URL] [--token-duration 24h] [--revoke-old-tokens]
#
# --server replaces the API address written into the kubeconfig, for when the
# operator reaches the member at another address than this machine does (kind:
# https://<cluster>-control-plane:6443).
#
# Nothing is changed anywhere until both clusters have answered, so bad input
# (a missing file, an unreachable server) fails with a clear message, a
# non-zero exit, and no change on the host or the member.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NAMESPACE=fedop-system
SERVICE_ACCOUNT=fedop-member
CLUSTER_ROLE=fedop-member
host_kubeconfig=""
member_kubeconfig=""
name=""
server=""
duration=24h
revoke=false

usage() {
  sed -n '/^# Usage:/,/^# --server/p' "$0" | sed 's/^# \{0,1\}//' | sed '$d' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --host-kubeconfig) host_kubeconfig=${2:-}; shift 2 ;;
    --member-kubeconfig) member_kubeconfig=${2:-}; shift 2 ;;
    --name) name=${2:-}; shift 2 ;;
    --server) server=${2:-}; shift 2 ;;
    --token-duration) duration=${2:-}; shift 2 ;;
    --revoke-old-tokens) revoke=true; shift ;;
    -h | --help) usage ;;
    *) printf 'error: unknown flag %s\n' "$1" >&2; usage ;;
  esac
done

[[ -n $host_kubeconfig && -n $member_kubeconfig && -n $name ]] ||
  die "--host-kubeconfig, --member-kubeconfig and --name are required (see --help)"
[[ -f $host_kubeconfig ]] || die "host kubeconfig $host_kubeconfig: no such file"
[[ -f $member_kubeconfig ]] || die "member kubeconfig $member_kubeconfig: no such file"
is_dns_label "$name" || die "member name '$name' must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)"
if [[ -n $server && ! $server =~ ^https:// ]]; then
  die "--server $server: must be an https:// URL"
fi

KUBECTL=$(kubectl_bin)
host() { "$KUBECTL" --kubeconfig "$host_kubeconfig" "$@"; }
member() { "$KUBECTL" --kubeconfig "$member_kubeconfig" "$@"; }

# Both clusters must answer before anything is written to either.
member --request-timeout=10s get --raw /readyz >/dev/null 2>&1 ||
  die "member cluster in $member_kubeconfig does not answer at $(member config view --minify -o jsonpath='{.clusters[0].cluster.server}' 2>/dev/null || echo '?')"
host --request-timeout=10s get --raw /readyz >/dev/null 2>&1 ||
  die "host cluster in $host_kubeconfig does not answer at $(host config view --minify -o jsonpath='{.clusters[0].cluster.server}' 2>/dev/null || echo '?')"

member_server=$(member config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.server}')
ca_data=$(member config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
[[ -n $ca_data ]] || die "member kubeconfig $member_kubeconfig has no CA data for its cluster; fedop does not connect without TLS verification"
server=${server:-$member_server}

log "Registering member $name ($server)"

# 1. Identity and least privilege in the member.
if $revoke; then
  log "Recreating ServiceAccount $NAMESPACE/$SERVICE_ACCOUNT in $name to invalidate its old tokens"
  member delete serviceaccount -n "$NAMESPACE" "$SERVICE_ACCOUNT" --ignore-not-found --wait=true >/dev/null
fi
member apply --server-side --field-manager=fedop-register-member -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: $SERVICE_ACCOUNT
  namespace: $NAMESPACE
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: $CLUSTER_ROLE
  labels:
    app.kubernetes.io/part-of: fedop
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, create]
- apiGroups: [""]
  resources: [pods, services, persistentvolumeclaims]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: [""]
  resources: [endpoints]
  verbs: [get, delete]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [pods/proxy]
  verbs: [get]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [get]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: $CLUSTER_ROLE
  labels:
    app.kubernetes.io/part-of: fedop
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: $CLUSTER_ROLE
subjects:
- kind: ServiceAccount
  name: $SERVICE_ACCOUNT
  namespace: $NAMESPACE
EOF

# 2. A bound token from the TokenRequest API, and a self-contained kubeconfig.
token=$(member create token "$SERVICE_ACCOUNT" -n "$NAMESPACE" --duration="$duration")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s' "$ca_data" | base64 -d >"$work/ca.crt"
kc=$work/kubeconfig
"$KUBECTL" config --kubeconfig "$kc" set-cluster "$name" --server "$server" \
  --certificate-authority "$work/ca.crt" --embed-certs=true >/dev/null
"$KUBECTL" config --kubeconfig "$kc" set-credentials "$SERVICE_ACCOUNT" --token "$token" >/dev/null
"$KUBECTL" config --kubeconfig "$kc" set-context "$name" --cluster "$name" \
  --user "$SERVICE_ACCOUNT" --namespace "$NAMESPACE" >/dev/null
"$KUBECTL" config --kubeconfig "$kc" use-context "$name" >/dev/null

# 3. The Secret on the host. Server-side apply updates it in place on a rerun.
host create namespace "$NAMESPACE" --dry-run=client -o yaml | host apply --server-side --field-manager=fedop-register-member -f - >/dev/null
host create secret generic "$name" -n "$NAMESPACE" --from-file=kubeconfig="$kc" --dry-run=client -o yaml |
  host label --local -f - fedop.io/member-cluster=true -o yaml |
  host apply --server-side --field-manager=fedop-register-member -f - >/dev/null

log "Member $name registered: Secret $NAMESPACE/$name on the host (token valid for $duration)"
