#!/bin/bash
# Run a sharded fleetsim sweep on Kubernetes and gather it:
#   SHARDS=8 IMAGE=registry.example.com/fleetsim:0.1.0 examples/kubernetes/sweep.sh
# The shard count is set here only; the Indexed Job's completions, parallelism and each pod's
# --shard K/N all take it. Each wait ends when its Job completes or fails, whichever comes first.
set -euo pipefail
: "${SHARDS:=8}" "${IMAGE:?set IMAGE to a fleetsim image (docker build -t ... . in a fleetsim clone)}"
here=$(cd "$(dirname "$0")" && pwd)
render() { sed -e "s|\${SHARDS}|$SHARDS|g" -e "s|\${IMAGE}|$IMAGE|g" "$1"; }

# wait for a Job to complete; exit 1 (with its pods' logs) as soon as it fails
wait_job() {
  local job=$1
  while :; do
    local state
    state=$(kubectl get job "$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
    case " $state " in
      *" Complete "*) return 0 ;;
      *" Failed "*) echo "job $job failed" >&2; kubectl logs "job/$job" --all-containers --tail=20 >&2 || true; exit 1 ;;
    esac
    sleep 10
  done
}

kubectl delete job fleetsim-sweep fleetsim-merge --ignore-not-found
render "$here/sweep-indexed-job.yaml" | kubectl apply -f -
wait_job fleetsim-sweep
render "$here/merge-job.yaml" | kubectl apply -f -
wait_job fleetsim-merge
echo "merged $SHARDS shards into sweep.json and sweep.csv on the fleetsim-results volume"
