#!/usr/bin/env bash
# what-failed.sh prints, from go test output in the files given, the failed
# assertions (testify's Error Trace blocks, without their diff headers), any
# panic, and the --- FAIL lines: what a reader of a long failed log looks
# for first, so callers print it last. Files that do not exist are skipped.
#
# Usage: hack/what-failed.sh LOG...
set -uo pipefail
logs=()
for f in "$@"; do
  [[ -f $f ]] && logs+=("$f")
done
((${#logs[@]})) || exit 0
grep -hE -A16 '^[[:space:]]+Error Trace:|^panic:' "${logs[@]}" |
  grep -vE '^[[:space:]]+(Diff:|--- Expected|\+\+\+ Actual)$' | tail -n 100
grep -hE '^[[:space:]]*--- FAIL' "${logs[@]}"
exit 0
