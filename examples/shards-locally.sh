#!/usr/bin/env bash
# The shard/merge workflow on one machine: four shards in parallel, merged into the result that
# one unsharded run gives (the script checks that it is byte-identical).
#   examples/shards-locally.sh [SCENARIO]   (FLEETSIM: the binary, default build/fleetsim)
set -euo pipefail
# a scenario given is named from the caller's directory; the default is the repository's
scenario=${1:-}
if [ -n "$scenario" ] && [ -e "$scenario" ]; then scenario=$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario"); fi
# and a FLEETSIM given likewise
bin=${FLEETSIM:-}
if [ -n "$bin" ] && [ -e "$bin" ]; then bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin"); fi
cd "$(dirname "$0")/.."
bin=${bin:-build/fleetsim}
scenario=${scenario:-tests/data/gpu-check.yaml}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pids=()
for k in 0 1 2 3; do
  "$bin" sweep "$scenario" --shard "$k/4" --threads 1 --format json >"$tmp/shard-$k.json" 2>"$tmp/shard-$k.err" &
  pids+=($!)
done
# every shard must succeed: a failed one says why (its own error, not the merge's of its empty file)
for k in 0 1 2 3; do
  if ! wait "${pids[$k]}"; then
    echo "shard $k/4 failed:" >&2
    cat "$tmp/shard-$k.err" >&2
    exit 2
  fi
done
"$bin" merge "$tmp"/shard-*.json --format json >"$tmp/merged.json"
"$bin" sweep "$scenario" --format json >"$tmp/whole.json" 2>"$tmp/whole.err" || { cat "$tmp/whole.err" >&2; exit 2; }
cmp "$tmp/merged.json" "$tmp/whole.json" && echo "merge of 4 shards == unsharded sweep"
"$bin" merge "$tmp"/shard-*.json
