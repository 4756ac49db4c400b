#!/usr/bin/env bash
# register-member.sh registers a member cluster with fedop's host cluster: a
# thin wrapper around `kubectl fedop join` (cmd/kubectl-fedop), kept so that
# the labs, hack/kind and the e2e suite register members as they always did.
# It builds bin/kubectl-fedop from the working tree (seconds with a warm Go
# cache), then runs
#
#   kubectl-fedop join NAME --kubeconfig HOST --member-kubeconfig MEMBER \
#     (--cluster-wide | --namespaces NS,...) [--server URL] [--token-duration D] [--revoke-old-tokens]
#
# Without --namespaces the member identity gets fedop's rights in every
# namespace (--cluster-wide, what this script always granted: the labs and
# the e2e suite create namespaces as they go); with it, a Role per namespace
# only. The token is renewed by fedop-manager before it expires. See
# `bin/kubectl-fedop join --help` and the README's "Registering a member
# cluster".
#
# Usage:
#   hack/register-member.sh --host-kubeconfig PATH --member-kubeconfig PATH \
#     --name NAME [--namespaces NS,...] [--server URL] [--token-duration 24h] [--revoke-old-tokens]
#
# --server replaces the API address written into the kubeconfig, for when the
# operator reaches the member at another address than this machine does (kind:
# https://<cluster>-control-plane:6443).
#
# Nothing is changed anywhere until both clusters have answered.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

host_kubeconfig=""
member_kubeconfig=""
name=""
args=()
scope=(--cluster-wide)

usage() {
  sed -n '/^# Usage:/,/^# --server/p' "$0" | sed 's/^# \{0,1\}//' | sed '$d' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --host-kubeconfig) host_kubeconfig=${2:-}; shift 2 ;;
    --member-kubeconfig) member_kubeconfig=${2:-}; shift 2 ;;
    --name) name=${2:-}; shift 2 ;;
    --namespaces) scope=(--namespaces "${2:-}"); shift 2 ;;
    --server | --token-duration) args+=("$1" "${2:-}"); shift 2 ;;
    --revoke-old-tokens) args+=("$1"); shift ;;
    -h | --help) usage ;;
    *) printf 'error: unknown flag %s\n' "$1" >&2; usage ;;
  esac
done

[[ -n $host_kubeconfig && -n $member_kubeconfig && -n $name ]] ||
  die "--host-kubeconfig, --member-kubeconfig and --name are required (see --help)"
[[ -f $host_kubeconfig ]] || die "host kubeconfig $host_kubeconfig: no such file"
[[ -f $member_kubeconfig ]] || die "member kubeconfig $member_kubeconfig: no such file"
is_dns_label "$name" || die "member name '$name' must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)"

(cd "$ROOT" && go build -o "$BIN/kubectl-fedop" ./cmd/kubectl-fedop) || die "building bin/kubectl-fedop failed"
"$BIN/kubectl-fedop" join "$name" --kubeconfig "$host_kubeconfig" --member-kubeconfig "$member_kubeconfig" \
  "${scope[@]}" "${args[@]}" >&2 || die "kubectl fedop join $name failed (see above); nothing was changed unless both clusters answered"
