#!/usr/bin/env bash
# The scale-out and CI examples run as written: the Slurm array and the Kubernetes Indexed Job's
# pod commands, executed here with the index each scheduler would set, merge into exactly the
# unsharded sweep; the submit and wait scripts drive fake sbatch and kubectl commands; the CI
# examples' check step runs in a git repository on a first pull request (no baseline yet) and on
# a later one.  Usage: examples_test.sh FLEETSIM SOURCE_DIR
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() {  # check NAME COMMAND...
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name"; fi
}
# the YAML is read with Debian's python3 and its python3-yaml (scripts/install-deps.sh), where present
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
mkdir "$tmp/bin"
ln -s "$bin" "$tmp/bin/fleetsim"
export PATH="$tmp/bin:$PATH"

# a small sweep: 24 configurations x 2 replications
cat >"$tmp/sweep.yaml" <<'YAML'
name: examples-sweep
seed: 3
duration_s: 300
warmup_s: 30
device: h100-sxm-80gb
model: llama-3.1-8b
fleet: {replicas: 1}
workload:
  arrival: {process: poisson, rate_per_s: 4}
  prompt_tokens: {dist: lognormal, median: 500, p99: 2000}
  output_tokens: {dist: lognormal, median: 100, p99: 400}
sweep:
  parameters:
    fleet.replicas: {from: 1, to: 3}
    engine.max_num_seqs: [16, 64, 128, 256]
    fleet.router: [least_outstanding, round_robin]
  replications: 2
  slo: {latency_s.ttft.p99: 1.0}
YAML
fleetsim sweep "$tmp/sweep.yaml" --threads 2 --format json >"$tmp/whole.json" 2>/dev/null

# Slurm: an array from 0 and one from 1 (--array=1-4) both give shards 0..3 of 4
for first in 0 1; do
  d="$tmp/slurm-$first"
  mkdir -p "$d/results"
  for i in 0 1 2 3; do
    (cd "$d" && SLURM_ARRAY_TASK_ID=$((first + i)) SLURM_ARRAY_TASK_MIN=$first SLURM_ARRAY_TASK_COUNT=4 \
      SLURM_CPUS_PER_TASK=1 bash "$src/examples/slurm/sweep-array.sh" "$tmp/sweep.yaml" 2>/dev/null)
  done
  echo '{"left": "by an earlier run of more shards"}' >"$d/results/shard-4.json"
  (cd "$d" && bash "$src/examples/slurm/merge.sh" results 4)
  check "slurm array from $first: merge == unsharded sweep" cmp -s "$d/results/sweep.json" "$tmp/whole.json"
  check "slurm array from $first: the CSV too" test -s "$d/results/sweep.csv"
done
# submit.sh: the log folder exists before sbatch runs; the merge depends on the array's success
cat >"$tmp/bin/sbatch" <<'SH'
#!/bin/sh
[ -d results ] || { echo "sbatch: results/ does not exist" >&2; exit 1; }
echo "$*" >>sbatch.log
echo 4242
SH
chmod +x "$tmp/bin/sbatch"
mkdir "$tmp/submit"
(cd "$tmp/submit" && bash "$src/examples/slurm/submit.sh" sweep.yaml 4 >/dev/null)
check "slurm submit: an array of 0-3 with its logs in results/" \
  grep -q -- "--array=0-3 --output=results/shard-%a.log" "$tmp/submit/sbatch.log"
check "slurm submit: the merge runs after every shard succeeded" grep -q -- "--dependency=afterok:4242" \
  "$tmp/submit/sbatch.log"

# Kubernetes: the templates rendered as sweep.sh renders them, each pod's command run with its index
render() { sed -e "s|\${SHARDS}|4|g" -e "s|\${IMAGE}|fleetsim:test|g" "$1"; }
render "$src/examples/kubernetes/sweep-indexed-job.yaml" >"$tmp/job.yaml"
render "$src/examples/kubernetes/merge-job.yaml" >"$tmp/merge.yaml"
"$py" - "$tmp/job.yaml" "$tmp/merge.yaml" "$tmp" <<'PY' || fail=$((fail + 1))
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
merge = yaml.safe_load(open(sys.argv[2]))
spec = job["spec"]
assert spec["completions"] == 4 and spec["parallelism"] == 4, spec
assert spec["completionMode"] == "Indexed" and "backoffLimitPerIndex" in spec, spec
c = spec["template"]["spec"]["containers"][0]
env = {e["name"]: e["value"] for e in c["env"]}
assert env["SHARDS"] == "4", env
open(sys.argv[3] + "/pod.sh", "w").write(c["args"][0])
open(sys.argv[3] + "/gather.sh", "w").write(merge["spec"]["template"]["spec"]["containers"][0]["args"][0])
PY
mkdir "$tmp/k8s"
for i in 0 1 2 3; do
  JOB_COMPLETION_INDEX=$i SHARDS=4 SCENARIO="$tmp/sweep.yaml" RESULTS="$tmp/k8s" sh -c "$(cat "$tmp/pod.sh")" 2>/dev/null
done
echo '{"left": "by an earlier run of more shards"}' >"$tmp/k8s/shard-4.json"
RESULTS="$tmp/k8s" sh -c "$(cat "$tmp/gather.sh")"
check "kubernetes indexed job: merge == unsharded sweep" cmp -s "$tmp/k8s/sweep.json" "$tmp/whole.json"
check "kubernetes gather: the outputs whole, no part left" bash -c "! ls '$tmp/k8s'/*.part 2>/dev/null"
# sweep.sh ends when a Job fails instead of waiting for ever, and gathers when both complete
cat >"$tmp/bin/kubectl" <<'SH'
#!/bin/sh
case "$1" in
  get) case "$3" in fleetsim-sweep) echo "$FAKE_SWEEP " ;; *) echo "Complete " ;; esac ;;
  apply) cat >>"$FAKE_LOG" ;;
  *) ;;
esac
SH
chmod +x "$tmp/bin/kubectl"
FAKE_SWEEP=Failed FAKE_LOG="$tmp/applied-1" IMAGE=fleetsim:test timeout 20 bash "$src/examples/kubernetes/sweep.sh" \
  >/dev/null 2>&1
check "kubernetes sweep.sh: a failed Job ends the wait with exit 1" test $? -eq 1
check "kubernetes sweep.sh: no gather after a failure" bash -c "! grep -q fleetsim-merge '$tmp/applied-1'"
FAKE_SWEEP=Complete FAKE_LOG="$tmp/applied-2" IMAGE=fleetsim:test SHARDS=4 timeout 20 \
  bash "$src/examples/kubernetes/sweep.sh" >/dev/null 2>&1
check "kubernetes sweep.sh: both Jobs complete" test $? -eq 0
check "kubernetes sweep.sh: the gather Job applied after the sweep" grep -q "name: fleetsim-merge" "$tmp/applied-2"
check "kubernetes sweep.sh: the count filled in once, everywhere" bash -c \
  "grep -q 'completions: 4' '$tmp/applied-2' && grep -q 'parallelism: 4' '$tmp/applied-2' && ! grep -q 'SHARDS}' '$tmp/applied-2'"

# CI examples: the check step in a repository whose target branch lacks the scenario, then has it
export HOME="$tmp/home" GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
mkdir -p "$HOME"
git init -q --bare "$tmp/origin.git"
git clone -q "$tmp/origin.git" "$tmp/repo" 2>/dev/null
(cd "$tmp/repo" && git checkout -q -b main && echo x >README && git add README && git commit -qm base &&
  git push -q origin main && git checkout -q -b pr && mkdir capacity &&
  cp "$src/examples/ci/chat-fleet.yaml" capacity/ && git add capacity && git commit -qm scenario)
"$py" - "$src/examples/ci/github-actions.yml" "$src/examples/ci/gitlab-ci.yml" "$tmp" <<'PY' || fail=$((fail + 1))
import sys, yaml
gh = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in gh["jobs"]["check"]["steps"] if s.get("name", "").startswith("budgets"))
open(sys.argv[3] + "/gh.sh", "w").write(step["run"].replace("${{ github.base_ref }}", "main"))
gl = yaml.safe_load(open(sys.argv[2]))["capacity-budgets"]
open(sys.argv[3] + "/gl.sh", "w").write("\n".join(gl["script"]) + "\n")
PY
for round in first later; do
  for ci in gh gl; do
    rm -f "$tmp/repo/check.xml" "$tmp/repo/check.md"
    (cd "$tmp/repo" && GITHUB_WORKSPACE="$tmp/repo" CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main \
      bash -e "$tmp/$ci.sh" >"$tmp/$ci-$round.out" 2>&1)
    rc=$?
    # chat-fleet.yaml misses its peak-window budget on purpose: exit 1, with the reports written
    check "$ci example, $round pull request: check ran and failed the budget (exit 1)" test "$rc" -eq 1
    check "$ci example, $round pull request: JUnit and Markdown written" \
      bash -c "grep -q 'failures=\"1\"' '$tmp/repo/check.xml' && test -s '$tmp/repo/check.md'"
    if [ "$round" = first ]; then
      check "$ci example, first pull request: says there is no baseline" grep -q "without a baseline" "$tmp/$ci-$round.out"
    else
      check "$ci example, later pull request: compares with the baseline" grep -q "baseline" "$tmp/repo/check.md"
    fi
  done
  (cd "$tmp/repo" && git push -q origin pr:main)  # the scenario lands on the target branch
done

echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
