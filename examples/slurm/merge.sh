#!/bin/bash
# The merge after every shard of the array succeeded: the unsharded result, as JSON and CSV.
#SBATCH --cpus-per-task=1
#SBATCH --mem=1G
#SBATCH --time=00:10:00
set -euo pipefail
dir=${1:-results}
fleetsim merge "$dir"/shard-*.json --format json >"$dir/sweep.json"
fleetsim merge "$dir"/shard-*.json --format csv >"$dir/sweep.csv"
