#!/usr/bin/env bash
# e2e-etcd.sh (`make e2e-etcd`) runs the etcd scenarios of the e2e suite
# (TestEtcd, e2e/etcd_test.go) on the kind clusters `make kind-up` made,
# which must include three members (KIND_MEMBERS="k8s-a k8s-b k8s-c"): a
# five-member etcd (config/samples/etcd) is created, upgraded and faulted
# while etcdcheck, a Job in the first member, writes and checks. It builds
# and loads the etcd images first (hack/kind/etcd-images.sh). The figures
# of the run go to docs/etcd-e2e.md.
#
# Usage: hack/kind/e2e-etcd.sh [go test flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

read -r -a members <<<"$KIND_MEMBERS"
((${#members[@]} >= 3)) || die "the etcd scenarios need three members: make kind-up KIND_MEMBERS=\"k8s-a k8s-b k8s-c\""
"$KIND_DIR/etcd-images.sh"
versions=$(cd "$ROOT/hack/etcd" && ls -d v*/ | tr -d / | paste -sd, -)
export E2E_ETCD_IMAGE=$ETCD_REPO E2E_ETCD_VERSIONS=$versions
E2E_ETCDCHECK_IMAGE=$ETCDCHECK_REPO:$(cat "$KIND_WORK/images/etcdcheck.tag")
export E2E_ETCDCHECK_IMAGE
E2E_NAME=e2e-etcd exec "$KIND_DIR/e2e.sh" -run '^TestEtcd$' "$@"
