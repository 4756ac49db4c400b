#!/usr/bin/env bash
# manifests.sh prints fedop's manifests for one image: the kustomization
# BASE (default config/default) rendered with `kubectl kustomize` through a
# throwaway overlay whose `images:` entry renames the image `fedop-manager`
# to IMAGE. Every install path goes through it, so none edits a manifest by
# hand: `make deploy`, `make undeploy`, `make build-installer`,
# hack/verify-installer.sh and hack/kind/up.sh (with base hack/kind/manager).
#
# Usage: hack/manifests.sh IMAGE [BASE]
#   IMAGE  name[:tag] or name@sha256:digest, e.g.
#          ghcr.io/example/fedop-manager:v0.1.0, localhost:5000/fedop-manager
#   BASE   a kustomization directory that includes config/manager
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 1 && $# <= 2)) || die "usage: $0 IMAGE [BASE]"
image=$1
base=${2:-$ROOT/config/default}
[[ -f $base/kustomization.yaml ]] || die "$base has no kustomization.yaml"

# Split IMAGE the way kustomize's `edit set image` does: a digest after @,
# else a tag after the last colon that comes after the last slash (a colon
# before it is a registry's port).
name=$image tag="" digest=""
if [[ $image == *@* ]]; then
  name=${image%@*} digest=${image#*@}
elif [[ ${image##*/} == *:* ]]; then
  name=${image%:*} tag=${image##*:}
fi
# The reference grammar of the distribution project, simplified: a
# lowercase name (with an optional registry host and port), a tag of up to
# 128 word characters, dots and dashes, or a sha256 digest.
[[ $name =~ ^[a-z0-9]([-a-z0-9._/:]*[a-z0-9])?$ ]] &&
  [[ -z $tag || $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] &&
  [[ -z $digest || $digest =~ ^sha256:[0-9a-f]{64}$ ]] ||
  die "image '$image' is not name[:tag] or name@sha256:digest"

# kustomize refuses absolute paths to resources, so the overlay names the
# base by a path relative to itself.
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
{
  echo "resources:"
  echo "- $(realpath --relative-to="$overlay" "$base")"
  echo "images:"
  echo "- name: fedop-manager"
  echo "  newName: $name"
  [[ -z $tag ]] || echo "  newTag: \"$tag\""
  [[ -z $digest ]] || echo "  digest: $digest"
} >"$overlay/kustomization.yaml"
"$(kubectl_bin)" kustomize "$overlay"
