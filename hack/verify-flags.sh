#!/usr/bin/env bash
# Fails when README.md's table of fedop-manager flags ("### fedop-manager
# flags") and `fedop-manager --help` name different flags, so that a flag
# added, renamed or dropped in cmd/fedop-manager cannot leave the table
# behind. controller-runtime's --zap-* flags share one row of the table,
# which must name --zap-log-level.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/fedop-manager" ./cmd/fedop-manager
# Go's flag package prints each flag as "  -name type" (or "  -name").
"$tmp/fedop-manager" --help 2>&1 | sed -n 's/^  -\([a-z0-9-]*\).*/--\1/p' | grep -v '^--zap-' | sort -u >"$tmp/help" || true
awk '/^### fedop-manager flags/ {on = 1; next} on && /^#/ {exit} on' README.md |
  grep -o '^| `--[a-z0-9-]*`' | sed 's/^| `//; s/`$//' | sort -u >"$tmp/readme"

grep -qx -- '--zap-log-level' "$tmp/readme" || { echo "README.md's fedop-manager flags table has no --zap-log-level row"; exit 1; }
grep -v '^--zap-' "$tmp/readme" >"$tmp/readme-own" || true
[[ -s $tmp/help ]] || { echo "fedop-manager --help listed no flags"; exit 1; }
if ! diff -u --label 'README.md (### fedop-manager flags)' --label 'fedop-manager --help' "$tmp/readme-own" "$tmp/help"; then
  echo "README.md's fedop-manager flags table and fedop-manager --help differ (above): update the table"
  exit 1
fi
