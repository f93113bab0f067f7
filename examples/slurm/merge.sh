#!/bin/bash
# The merge after every shard of the array succeeded: the unsharded result, as JSON and CSV.
#SBATCH --cpus-per-task=1
#SBATCH --mem=1G
#SBATCH --time=00:10:00
set -euo pipefail
dir=${1:-results}
# the shards of this array only (a larger earlier run may have left more), and outputs written
# whole or not at all
shards=("$dir"/shard-*.json)
if [ -n "${2:-}" ]; then shards=(); for ((k = 0; k < $2; k++)); do shards+=("$dir/shard-$k.json"); done; fi
fleetsim merge "${shards[@]}" --format json >"$dir/sweep.json.part" && mv "$dir/sweep.json.part" "$dir/sweep.json"
fleetsim merge "${shards[@]}" --format csv >"$dir/sweep.csv.part" && mv "$dir/sweep.csv.part" "$dir/sweep.csv"
