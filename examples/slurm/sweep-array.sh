#!/bin/bash
# One shard of a fleetsim sweep as a task of a Slurm job array (submit.sh submits the array):
# the shard is the task's index counted from the array's first index, of the array's task count.
#SBATCH --job-name=fleetsim-sweep
#SBATCH --cpus-per-task=8
#SBATCH --mem=2G
#SBATCH --time=02:00:00
set -euo pipefail
scenario=${1:?usage: sbatch --array=0-7 sweep-array.sh SCENARIO}
k=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-0}))
n=${SLURM_ARRAY_TASK_COUNT:?not a task of a Slurm job array}
out=results/shard-$k.json
# written whole or not at all: a failed task leaves no shard for the merge to take
fleetsim sweep "$scenario" --threads "${SLURM_CPUS_PER_TASK:-1}" --shard "$k/$n" --format json >"$out.part"
mv "$out.part" "$out"
