#!/usr/bin/env bash
# The shard/merge workflow on one machine: four shards in parallel, merged into the result that
# one unsharded run gives (the script checks that it is byte-identical).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FLEETSIM:-build/fleetsim}
scenario=${1:-tests/data/gpu-check.yaml}
tmp=$(mktemp -d)
for k in 0 1 2 3; do
  "$bin" sweep "$scenario" --shard "$k/4" --threads 1 --format json >"$tmp/shard-$k.json" 2>/dev/null &
done
wait
"$bin" merge "$tmp"/shard-*.json --format json >"$tmp/merged.json"
"$bin" sweep "$scenario" --format json >"$tmp/whole.json" 2>/dev/null
cmp "$tmp/merged.json" "$tmp/whole.json" && echo "merge of 4 shards == unsharded sweep"
"$bin" merge "$tmp"/shard-*.json
