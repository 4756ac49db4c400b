#!/usr/bin/env bash
# build.sh OUTDIR builds the inputs of fedop's etcd images, offline (Go
# modules only), for every etcd version pinned by a module hack/etcd/v*/:
#
#   OUTDIR/<version>/etcd, etcdctl   from that version's module
#   OUTDIR/<version>/etcd-agent      from ./hack/etcd/agent (fedop's module)
#   OUTDIR/<version>/Dockerfile      FROM scratch, the three binaries, the
#                                    agent as the entrypoint
#   OUTDIR/etcdcheck/etcdcheck       the checker, ./e2e/etcdcheck/cmd/etcdcheck
#   OUTDIR/etcdcheck/Dockerfile      FROM scratch, the checker as entrypoint
#
# so that `docker build -t fedop.local/etcd:<version> OUTDIR/<version>` and
# `docker build -t fedop.local/etcdcheck:<tag> OUTDIR/etcdcheck` make the
# images. Every binary is static (CGO_ENABLED=0): the images have no libc.
# The Go build cache makes a run with nothing changed take seconds.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

static_build() { CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" "$@"; }

for mod in "$here"/v*/go.mod; do
  dir=$(dirname "$mod")
  version=$(basename "$dir")
  dest=$out/$version
  mkdir -p "$dest"
  echo "Building etcd $version into $dest" >&2
  (cd "$dir" && static_build -o "$dest/etcd" go.etcd.io/etcd/server/v3 &&
    static_build -o "$dest/etcdctl" go.etcd.io/etcd/etcdctl/v3)
  (cd "$root" && static_build -o "$dest/etcd-agent" ./hack/etcd/agent)
  cat >"$dest/Dockerfile" <<DOCKERFILE
# fedop.local/etcd:$version, written by hack/etcd/build.sh. The build context
# holds only the three static binaries: there is no base image to pull on an
# offline machine, and etcd needs none (no libc, no shell, no CA bundle: the
# cluster speaks plain HTTP inside the federation's network).
FROM scratch
LABEL org.opencontainers.image.title=etcd org.opencontainers.image.version=$version
COPY etcd etcdctl etcd-agent /usr/local/bin/
# No USER: etcd writes its data dir, a volume whose owner the pod decides
# (a hostPath made by DirectoryOrCreate belongs to root); set runAsUser in
# the pod where the volume allows it.
# The agent is PID 1: it starts etcd with the arguments after "--",
# forwards SIGTERM to it and serves the hooks (/drain, /undrain, /healthz)
# on :8080. Client 2379 and peer 2380 are etcd's own ports.
EXPOSE 2379 2380 8080
ENTRYPOINT ["/usr/local/bin/etcd-agent", "--etcd=/usr/local/bin/etcd"]
DOCKERFILE
done

echo "Building etcdcheck into $out/etcdcheck" >&2
mkdir -p "$out/etcdcheck"
(cd "$root" && static_build -o "$out/etcdcheck/etcdcheck" ./e2e/etcdcheck/cmd/etcdcheck)
cat >"$out/etcdcheck/Dockerfile" <<'DOCKERFILE'
# fedop.local/etcdcheck, written by hack/etcd/build.sh: the checker of the
# etcd workload (e2e/etcdcheck), run as a Job in a member cluster. Its
# report is the last line of its log.
FROM scratch
COPY etcdcheck /etcdcheck
USER 65532:65532
# GET /stop and GET /progress.
EXPOSE 8080
ENTRYPOINT ["/etcdcheck"]
DOCKERFILE
