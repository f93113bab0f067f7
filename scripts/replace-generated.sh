#!/usr/bin/env bash
# Replace the generated part of a document: the lines between BEGIN and END (marker lines kept)
# become the contents of TABLE. Used by validate-memory.sh and validate-latency.sh.
#   scripts/replace-generated.sh DOC BEGIN END TABLE
set -euo pipefail
doc=$1 begin=$2 end=$3 table=$4
grep -qxF "$begin" "$doc" && grep -qxF "$end" "$doc" || { echo "$(basename "$0"): markers missing in $doc" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk -v b="$begin" -v e="$end" -v t="$table" '
  $0 == b { print; while ((getline line < t) > 0) print line; skip = 1; next }
  $0 == e { skip = 0 }
  !skip { print }' "$doc" >"$tmp"
cat "$tmp" >"$doc"
