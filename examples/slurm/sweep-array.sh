#!/bin/bash
# A fleetsim sweep as a Slurm job array of 8 shards, then a dependent merge job:
#
#   jid=$(sbatch --parsable sweep-array.sh)
#   sbatch --dependency=afterok:$jid --wrap "fleetsim merge results/shard-*.json --format csv > sweep.csv"
#
#SBATCH --job-name=fleetsim-sweep
#SBATCH --array=0-7
#SBATCH --cpus-per-task=8
#SBATCH --mem=2G
#SBATCH --time=02:00:00
#SBATCH --output=results/shard-%a.log
set -euo pipefail
mkdir -p results
fleetsim sweep scenarios/sweep-fleet.yaml --threads "$SLURM_CPUS_PER_TASK" \
  --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" --format json \
  > "results/shard-${SLURM_ARRAY_TASK_ID}.json"
