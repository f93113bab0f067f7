#!/bin/bash
# A fleetsim sweep on Slurm: a job array of SHARDS shards, then a merge that runs only when every
# shard succeeded (afterok). Run it from the directory that holds the scenario:
#   examples/slurm/submit.sh scenarios/sweep-fleet.yaml 8
# Results land in results/: shard-K.json and .log per shard, then sweep.json, sweep.csv, merge.log.
set -euo pipefail
scenario=${1:?usage: submit.sh SCENARIO [SHARDS]}
shards=${2:-8}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p results  # Slurm opens each task's log here before the task runs
jid=$(sbatch --parsable --array="0-$((shards - 1))" --output=results/shard-%a.log "$here/sweep-array.sh" "$scenario")
# (a failed shard cancels the merge, rather than leaving it pending for ever)
sbatch --parsable --dependency="afterok:$jid" --kill-on-invalid-dep=yes --job-name=fleetsim-merge \
  --output=results/merge.log "$here/merge.sh" results "$shards"
echo "submitted array $jid ($shards shards) and its merge"
