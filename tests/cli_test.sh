#!/usr/bin/env bash
# The CLI end to end: exit codes (0 ok, 2 usage/input, 3 output not written, 130/143 a sweep
# stopped by a signal), one-line located errors, formats, journals.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

expect() {  # expect NAME CODE [STDERR_PREFIX] -- command...
  local name=$1 code=$2 prefix=$3
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local ok=1
  [ "$rc" -eq "$code" ] || ok=0
  if [ -n "$prefix" ]; then
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || ok=0
    grep -qF -- "$prefix" "$tmp/err" || ok=0
  fi
  if [ $ok -eq 1 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $name (exit $rc, wanted $code)"
    sed 's/^/  stderr: /' "$tmp/err" | head -5
  fi
}

check() {  # check NAME CONDITION...: a test of files the last command left
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name"; fi
}

expect "default run" 0 "" -- "$bin" run --duration 600
expect "run --threads without windows" 2 "--threads: error: a run without windows is one simulation on one thread" -- "$bin" run --threads 2
expect "run --window" 0 "" -- "$bin" run --duration 1500 --window 300 --threads 2
check "run --window prints the worst window beside the whole run" \
  grep -q "worst window: ttft p99 .* ms in .* s (of 4 windows of 300 s; the whole run's p99 .* ms)" "$tmp/out"
expect "run --window --format json" 0 "" -- "$bin" run --duration 1500 --window 300 --threads 2 --format json
check "worst_window is the timeline's highest p99 TTFT" python3 - "$tmp/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["timeline"]
assert len(rows) == 4, len(rows)
worst = max(rows, key=lambda x: x["ttft_p99_s"])
w = r["worst_window"]
assert w["ttft_p99_s"] == worst["ttft_p99_s"] and w["t0_s"] == worst["t0_s"], (w, worst)
assert abs(w["window_s"] - 300) < 1e-9, w
PY
expect "run --window under 10 s" 2 "--window: 5 is out of range" -- "$bin" run --window 5
expect "run --window longer than the run" 2 "--window: error: --window 99999 s is longer" -- "$bin" run --window 99999
expect "run --window of the span, however it rounds" 0 "" -- "$bin" run --set duration_s=16.2 --set warmup_s=0.1 \
  --window 16.1
expect "run --window with a ledger export" 2 "--window: error: --window measures latency windows" -- \
  "$bin" run --duration 600 --window 100 --format focus
expect "run --window where no window has a first token" 0 "" -- "$bin" run "$src/scenarios/scale-to-zero.yaml" \
  --set duration_s=100 --window 50 --format json
check "worst_window is still an object, its p99 null" python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["worst_window"]
assert w["ttft_p99_s"] is None and w["t0_s"] == 0 and w["window_s"] == 50, w' "$tmp/out"
cp "$tmp/out" "$tmp/nofirst.json"
expect "report of that run" 0 "" -- "$bin" report "$tmp/nofirst.json" -o "$tmp/nofirst.html"
expect "json run" 0 "" -- "$bin" run --duration 600 --format json
grep -q '"schema_version": 1' "$tmp/out" || { echo "FAIL: json has no schema_version"; fail=$((fail + 1)); }
expect "csv run" 0 "" -- "$bin" run --duration 600 --format csv
head -1 "$tmp/out" | grep -q 'requests.arrived' || { echo "FAIL: csv header"; fail=$((fail + 1)); }
expect "closed-loop benchmark" 0 "" -- "$bin" run "$src/scenarios/closed-loop-benchmark.yaml" --duration 120 --set warmup_s=10
grep -q '^workload  64 closed-loop clients' "$tmp/out" && grep -q '^clients     64 = ' "$tmp/out" ||
  { echo "FAIL: closed-loop benchmark table"; fail=$((fail + 1)); }
expect "closed-loop benchmark csv" 0 "" -- "$bin" run "$src/scenarios/closed-loop-benchmark.yaml" --duration 120 \
  --set warmup_s=10 --format csv
head -1 "$tmp/out" | grep -q 'closed_loop.response_time_law' || { echo "FAIL: csv has no closed_loop"; fail=$((fail + 1)); }
expect "catalog" 0 "" -- "$bin" catalog
expect "catalog csv" 0 "" -- "$bin" catalog --format csv
check "catalog csv is one table: one header, every row its width" python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert sum(r[0] == "type" for r in rows) == 1 and len({len(r) for r in rows}) == 1, rows[:2]
assert {r[0] for r in rows[1:]} == {"device", "model"}
# every field of the JSON, a column each
import json, subprocess
j = json.loads(subprocess.run([sys.argv[2], "catalog", "--format", "json"], capture_output=True, text=True).stdout)
keys = {k for t in ("devices", "models") for x in j[t] for k in x}
assert keys | {"type"} == set(rows[0]), sorted(keys ^ set(rows[0]))
n = len(j["devices"])
assert [r[1] for r in rows[1:n + 1]] == [d["name"] for d in j["devices"]]' "$tmp/out" "$bin"
expect "capacity" 0 "" -- "$bin" capacity --model llama-3.1-8b --device h100-sxm-80gb --context 8192
expect "capacity does not fit" 1 "" -- "$bin" capacity --model llama-3.1-70b --device l4-24gb
expect "capacity unknown model" 2 "--model: error: unknown model 'llama-3.1-80b'" -- \
  "$bin" capacity --model llama-3.1-80b --device h100-sxm-80gb
expect "capacity tensor-parallel" 0 "" -- "$bin" capacity --model llama-3.1-405b --device h100-sxm-80gb --tp 8 --weight-dtype fp8
expect "capacity tp that does not split the heads" 2 "--tp: error: qwen2.5-7b has 28 attention heads" -- \
  "$bin" capacity --model qwen2.5-7b --device h100-sxm-80gb --tp 8
"$bin" capacity --model llama-3.1-70b --device h100-sxm-80gb | grep -q "it fits at --tp 2" ||
  { echo "FAIL: capacity names the smallest tp that fits"; fail=$((fail + 1)); }
# The seeds' "reranker on a GPU at 4% utilization". By hand, a 320-token pair (the mean of
# 128..512) on an H100 is 2 ms + 2 x 0.568e9 x 320 FLOP / (989 TFLOP/s x 0.5) = 2.75 ms, so 15 pairs/s
# keep it busy 4.1%; on the c7i.8xlarge (39.3 TFLOP/s x 0.25, 5 ms per step) a pair takes ~43 ms:
# busy ~64%, and per 1M input tokens $1.428 / 17.28M tokens an hour = $0.083 vs the H100's $0.174.
# Without AMX (c6i, FP32 AVX-512) six instances are needed and cost more than the whole H100.
expect "reranker cpu vs gpu" 0 "" -- "$bin" run "$src/scenarios/reranker-cpu-vs-gpu.yaml" --format json
check "reranker: whole GPU ~4% busy, AMX CPU cheaper within the SLO, AVX-512 CPU dearer" python3 - "$tmp/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
pool = lambda n: j["pools"][n]
busy = lambda n: pool(n)["utilization"]["busy_fraction"]
usd = lambda n: pool(n)["cost"]["per_million_input_tokens_usd"]
p99 = lambda c: j["classes"][c]["latency_s"]["e2e"]["p99"]
ok = (0.03 < busy("h100-whole") < 0.06 and 0.5 < busy("cpu-amx") < 0.75
      and usd("cpu-amx") < 0.6 * usd("h100-whole") and p99("rerank-amx") < 0.5
      and usd("cpu-avx512") > usd("h100-whole") and usd("h100-mig") < usd("cpu-amx")
      and pool("cpu-amx")["capacity"]["cuda_graph_gib"] == 0)
sys.exit(0 if ok else 1)
PY
expect "duration nan" 2 "--duration: expected a finite number, got 'nan'" -- "$bin" run --duration nan
expect "duration inf" 2 "--duration: expected a finite number, got 'inf'" -- "$bin" run --duration inf
expect "gpu memory utilization nan" 2 "--gpu-memory-utilization: expected a finite number" -- \
  "$bin" capacity --model llama-3.1-8b --device h100-sxm-80gb --gpu-memory-utilization nan
expect "negative seed" 2 "--seed: expected an integer" -- "$bin" run --seed -1
expect "seed past 2^64" 2 "--seed: expected an integer" -- "$bin" run --seed 18446744073709551616
"$bin" run --duration 600 --seed 9007199254740993 --format json | grep -q '"seed": 9007199254740993' ||
  { echo "FAIL: a seed past 2^53 is kept exactly"; fail=$((fail + 1)); }
for f in "$src"/scenarios/*.yaml; do
  expect "validate $f" 0 "" -- "$bin" validate "$f"
done
expect "missing file" 2 "/no/such.yaml: error: cannot open scenario file" -- "$bin" run /no/such.yaml
printf 'duration_s: 10\nfleet: [1, 2\n' >"$tmp/bad.yaml"
expect "malformed yaml" 2 "$tmp/bad.yaml:3:1: error: malformed YAML" -- "$bin" run "$tmp/bad.yaml"
sed 's/  replicas: 2/  replicas: -2/' "$src/scenarios/chat-default.yaml" >"$tmp/neg.yaml"
line=$(grep -n '  replicas: -2' "$tmp/neg.yaml" | cut -d: -f1)
expect "negative replicas" 2 "neg.yaml:$line:13: error: fleet.replicas: value -2 is out of range" -- "$bin" run "$tmp/neg.yaml"
expect "bad --set" 2 "--set fleet.replicas=x: error: fleet.replicas: expected a number" -- \
  "$bin" run --set fleet.replicas=x
expect "unknown --set key" 2 "--set fleet.replcas=3: error: fleet.replcas: unknown key" -- \
  "$bin" run --set fleet.replcas=3
expect "does not fit" 2 "error: model: model llama-3.1-70b (bf16) does not fit on h100-sxm-80gb" -- \
  "$bin" run --set model=llama-3.1-70b
expect "warm-up longer than the run" 2 "error: warmup_s: warmup_s must be less than duration_s" -- \
  "$bin" run --duration 100
# --set with a YAML flow value replaces the whole mapping or list; errors inside it point at the --set
expect "--set a whole mapping switches the arrival process" 0 "" -- \
  "$bin" run "$src/scenarios/closed-loop-benchmark.yaml" --duration 120 --set warmup_s=10 \
  --set 'workload.arrival={process: poisson, rate_per_s: 40}'
check "the run is Poisson at 40/s" grep -q '^workload  poisson arrivals at 40' "$tmp/out"
expect "--set of a mapping: an error inside it" 2 \
  "--set workload.arrival={process: poisson, rate_per_s: 40, clients: 8}: error: workload.arrival.clients: 'clients' does not apply" -- \
  "$bin" run "$src/scenarios/closed-loop-benchmark.yaml" --set 'workload.arrival={process: poisson, rate_per_s: 40, clients: 8}'
expect "--set of a sweep list: a bad value is located at the --set" 2 \
  "--set sweep.parameters.engine.max_num_seqs=[16, x]: error: engine.max_num_seqs: expected a number, got 'x'" -- \
  "$bin" validate "$src/tests/data/tiny-sweep.yaml" --set 'sweep.parameters.engine.max_num_seqs=[16, x]'
expect "--set of a sweep list: a new parameter" 0 "" -- \
  "$bin" validate "$src/tests/data/tiny-sweep.yaml" --set 'sweep.parameters.engine.max_batched_tokens=[4096, 8192, 16384]'
check "the new parameter triples the sweep" grep -q 'sweep of 12 configurations x 2 replications' "$tmp/out"

# validate: a sweep is a top-level sweep: key, not the word in a comment
{ echo "# not a sweep: see sweep-fleet.yaml for one"; cat "$src/scenarios/chat-default.yaml"; } >"$tmp/comment.yaml"
expect "validate a scenario whose comment says sweep:" 0 "" -- "$bin" validate "$tmp/comment.yaml"
check "it is validated as a plain scenario" sh -c "grep -q ': ok (' '$tmp/out' && ! grep -q 'sweep of' '$tmp/out'"
expect "validate a sweep" 0 "" -- "$bin" validate "$src/tests/data/tiny-sweep.yaml"
check "validate counts the sweep" grep -q 'sweep of 4 configurations x 2 replications' "$tmp/out"

expect "unknown subcommand" 2 "unknown command 'frobnicate' (expected one of: run, validate" -- "$bin" frobnicate
# an empty value is not "not given": each would have run something else without a word
expect "empty scenario" 2 "scenario: an empty value (see fleetsim run --help)" -- "$bin" run ""
expect "empty budgets" 2 "--budgets: an empty value (see fleetsim check --help)" -- "$bin" check --budgets ""
expect "empty report output" 2 "--output: an empty value" -- "$bin" report "$src/tests/data/report_sweep.json" -o ""
expect "negative shard count" 2 "--shard 5/-1: error: expected K/N with 0 <= K < N" -- \
  "$bin" sweep "$src/tests/data/tiny-sweep.yaml" --shard 5/-1
expect "bad format" 2 "" -- "$bin" run --format xml
expect "no subcommand" 2 "" -- "$bin"
expect "negative duration" 2 "" -- "$bin" run --duration -5

# sweeps: shards merge into exactly the unsharded result
small=(--set sweep.sample=12 --set duration_s=300 --set warmup_s=30 --threads 2)
expect "sweep table" 0 "" -- "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}"
expect "sweep json" 0 "" -- "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --format json
cp "$tmp/out" "$tmp/whole.json"
for k in 0 1 2; do
  expect "shard $k" 0 "" -- "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --shard "$k/3" --format json
  cp "$tmp/out" "$tmp/shard$k.json"
done
check "a shard's start line counts its own configurations" grep -qF 'fleetsim sweep: 4 of 12 configurations (shard 2/3) x' "$tmp/err"
expect "merge" 0 "" -- "$bin" merge "$tmp/shard2.json" "$tmp/shard0.json" "$tmp/shard1.json" --format json
cmp -s "$tmp/out" "$tmp/whole.json" || { echo "FAIL: merged shards differ from the whole sweep"; fail=$((fail + 1)); }
expect "merge incomplete" 2 "error: incomplete: 2 of 3 shards given; missing shard 1" -- \
  "$bin" merge "$tmp/shard0.json" "$tmp/shard2.json"
expect "merge missing file" 2 "/no/shard.json: error: cannot open shard file" -- "$bin" merge /no/shard.json
expect "sweep csv" 0 "" -- "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --format csv
[ "$(wc -l <"$tmp/out")" -eq 13 ] || { echo "FAIL: sweep csv should have a header and 12 rows"; fail=$((fail + 1)); }
cp "$tmp/out" "$tmp/whole.csv"
# csv and jsonl stream rows as they finish, in index order whatever the thread count
expect "sweep csv on one thread" 0 "" -- "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]:0:6}" --format csv --threads 1
check "streamed csv is the same on 1 and 2 threads" cmp -s "$tmp/out" "$tmp/whole.csv"
expect "merge csv" 0 "" -- "$bin" merge "$tmp/shard2.json" "$tmp/shard0.json" "$tmp/shard1.json" --format csv
check "merged csv equals the streamed csv" cmp -s "$tmp/out" "$tmp/whole.csv"
expect "sweep jsonl" 0 "" -- "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --format jsonl
check "sweep jsonl: a header, 12 rows and the summary" sh -c "[ \$(wc -l <'$tmp/out') -eq 14 ] && head -1 '$tmp/out' | grep -q '\"kind\":\"sweep\"' && tail -1 '$tmp/out' | grep -q '^{\"summary\":'"
cp "$tmp/out" "$tmp/whole.jsonl"
expect "merge jsonl" 0 "" -- "$bin" merge "$tmp/shard2.json" "$tmp/shard0.json" "$tmp/shard1.json" --format jsonl
check "merged jsonl equals the streamed jsonl" cmp -s "$tmp/out" "$tmp/whole.jsonl"
expect "bad shard" 2 "--shard 3/3: error: expected K/N with 0 <= K < N" -- \
  "$bin" sweep "$src/tests/data/gpu-check.yaml" --shard 3/3
expect "grid over the limit" 2 "error: sweep.parameters: 1024 configurations exceed the limit of 100" -- \
  "$bin" sweep "$src/tests/data/gpu-check.yaml" --set sweep.max_configurations=100
expect "no sweep section" 2 "error: no sweep section" -- "$bin" sweep "$src/scenarios/chat-default.yaml"
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect "cuda without a device" 2 "--backend: error: cuda backend unavailable" -- \
    "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --backend cuda
fi

# merge checks its shards: located errors, exit 2, never a crash
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
s1 = json.load(open(f"{d}/shard1.json"))
def save(name, doc): json.dump(doc, open(f"{d}/{name}", "w"))
x = json.loads(json.dumps(s1)); del x["rows"][0]["index"]; save("noindex.json", x)
x = json.loads(json.dumps(s1)); x["rows"][1]["index"] = "x"; save("xindex.json", x)
x = json.loads(json.dumps(s1)); x["shard"]["index"] = 7; save("shard7.json", x)
x = json.loads(json.dumps(s1)); x["shard"]["index"] = 2; save("relabelled.json", x)
PY
sed 's/"seed": 11/"seed": 1e400/' "$tmp/shard0.json" >"$tmp/huge.json"
seedline=$(grep -n '"seed": 1e400' "$tmp/huge.json" | head -1 | cut -d: -f1)
expect "merge: a row without index" 2 "noindex.json: error: /rows/0: missing key \"index\"" -- \
  "$bin" merge "$tmp/shard0.json" "$tmp/noindex.json" "$tmp/shard2.json"
expect "merge: an index that is a string" 2 "xindex.json: error: /rows/1/index: expected an integer, got \"x\"" -- \
  "$bin" merge "$tmp/shard0.json" "$tmp/xindex.json" "$tmp/shard2.json"
expect "merge: shard index out of range" 2 "shard7.json: error: /shard/index: shard 7 is out of range for 3 shards" -- \
  "$bin" merge "$tmp/shard0.json" "$tmp/shard1.json" "$tmp/shard7.json"
expect "merge: a shard relabelled" 2 "relabelled.json: error: /rows/0/index: configuration 1 belongs to shard 1 of 3, not to shard 2" -- \
  "$bin" merge "$tmp/shard0.json" "$tmp/shard1.json" "$tmp/relabelled.json"
expect "merge: a shard twice" 2 "error: /shard/index: shard 1 appears twice" -- \
  "$bin" merge "$tmp/shard0.json" "$tmp/shard1.json" "$tmp/shard1.json"
expect "merge: a number beyond a double" 2 "huge.json:$seedline:13: error: number out of range (beyond a double): 1e400" -- \
  "$bin" merge "$tmp/huge.json" "$tmp/shard1.json" "$tmp/shard2.json"
expect "merge: a directory" 2 "$tmp: error: is a directory, not a shard file" -- "$bin" merge "$tmp" "$tmp/shard1.json"

# output that cannot be written: a full disk is an error (exit 3); a reader that leaves early
# (| head) ends the command quietly, not by SIGPIPE
if [ -w /dev/full ]; then
  expect "run > /dev/full" 3 "fleetsim: error: writing the output failed: No space left on device" -- \
    sh -c '"$1" run --duration 600 >/dev/full' sh "$bin"
  expect "merge > /dev/full" 3 "fleetsim: error: writing the output failed" -- \
    sh -c '"$1" merge "$2/shard0.json" "$2/shard1.json" "$2/shard2.json" >/dev/full' sh "$bin" "$tmp"
  expect "journal on a full disk" 3 "/dev/full: error: writing the journal failed: No space left on device" -- \
    "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --journal /dev/full
  # one line: the report says its failure once
  expect "report > /dev/full" 3 "fleetsim report: error: writing the report failed: No space left on device" -- \
    sh -c '"$1" report --set duration_s=600 >/dev/full' sh "$bin"
  # a device is written in place, not replaced by a file
  expect "report -o /dev/full" 3 "/dev/full: error: writing the report failed: No space left on device" -- \
    "$bin" report --set duration_s=600 -o /dev/full
fi
# a file is written beside itself and renamed over it: whole, nothing left beside it, its mode
# kept; a link stays a link to the file it named; a file with another name is written in place
mkdir "$tmp/wr"
echo old >"$tmp/wr/keep.html"
chmod 640 "$tmp/wr/keep.html"
ln -s keep.html "$tmp/wr/link.html"
expect "report -o through a link" 0 "" -- "$bin" report --set duration_s=600 -o "$tmp/wr/link.html"
check "report -o replaces the linked file whole, keeps the link and the mode, leaves nothing beside" \
  sh -c 'tail -c 8 "$1/keep.html" | grep -q "</html>" && [ -L "$1/link.html" ] && [ "$(stat -c %a "$1/keep.html")" = 640 ] &&
         [ "$(ls -A "$1" | wc -l)" = 2 ]' sh "$tmp/wr"
ln "$tmp/wr/keep.html" "$tmp/wr/twin.html"
echo old >"$tmp/wr/keep.html"
expect "report -o over a hard-linked file" 0 "" -- "$bin" report --set duration_s=600 -o "$tmp/wr/keep.html"
check "report -o writes a hard-linked file in place: both names see the report" \
  sh -c 'tail -c 8 "$1/twin.html" | grep -q "</html>"' sh "$tmp/wr"
# a write that fails part way (here past a file-size limit) leaves the old file as it was
echo old >"$tmp/wr/kept.html"
expect "report -o past a file-size limit" 3 "kept.html: error: writing the report failed: File too large" -- \
  sh -c 'trap "" XFSZ && ulimit -f 8 && exec "$1" report --set duration_s=600 -o "$2/kept.html"' sh "$bin" "$tmp/wr"
check "a report that could not be written whole leaves the old file and nothing beside it" \
  sh -c '[ "$(cat "$1/kept.html")" = old ] && [ "$(ls -A "$1" | wc -l)" = 4 ]' sh "$tmp/wr"
# a link into /proc (as /dev/stdout is) writes to what stdout is, here a redirect to a file
# (the same file, not one renamed over it), also where a linked folder leads there
ln -s /proc/self/fd/1 "$tmp/wr/stdout"
ln -s /proc/self/fd "$tmp/wr/fd"
for via in stdout fd/1; do
  : >"$tmp/wr/redirected.html"
  inode=$(stat -c %i "$tmp/wr/redirected.html")
  expect "report -o $via (to stdout)" 0 "" -- \
    sh -c '"$1" report --set duration_s=600 -o "$2/$3" >"$2/redirected.html"' sh "$bin" "$tmp/wr" "$via"
  check "report -o $via writes through to the redirect's file and leaves the link" \
    sh -c 'tail -c 8 "$1/redirected.html" | grep -q "</html>" && [ -L "$1/stdout" ] &&
           [ "$(stat -c %i "$1/redirected.html")" = "$2" ]' sh "$tmp/wr" "$inode"
done
# a link followed as the kernel follows it: a linked folder first, then its ".."
mkdir -p "$tmp/wr/real/sub"
echo old >"$tmp/wr/real/out.html"
ln -s real/sub "$tmp/wr/alias"
ln -s ../out.html "$tmp/wr/real/sub/link.html"
expect "report -o through a linked folder and .." 0 "" -- "$bin" report --set duration_s=600 -o "$tmp/wr/alias/link.html"
check "report -o through a linked folder and .. replaces the file the kernel finds there" \
  sh -c 'tail -c 8 "$1/real/out.html" | grep -q "</html>" && [ ! -e "$1/out.html" ]' sh "$tmp/wr"
# a new file gets the mode the umask gives, as a redirect would
expect "report -o a new file" 0 "" -- sh -c 'umask 027 && "$1" report --set duration_s=600 -o "$2/new.html"' sh "$bin" "$tmp/wr"
check "report -o a new file has the umask's mode" sh -c '[ "$(stat -c %a "$1/new.html")" = 640 ]' sh "$tmp/wr"
# a sweep that cannot start leaves no journal behind to refuse its retry
if ! "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --backend cuda >/dev/null 2>&1; then
  expect "sweep on a missing cuda backend" 2 "" -- \
    "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --backend cuda --journal "$tmp/nocuda.jsonl"
  check "no journal left by a sweep that could not start" [ ! -e "$tmp/nocuda.jsonl" ]
fi
# a journal that cannot be created is an output that cannot be written: exit 3
expect "journal in a missing folder" 3 "$tmp/no-such-dir/j.jsonl: error: cannot create the journal: No such file" -- \
  "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --journal "$tmp/no-such-dir/j.jsonl"
expect "journal that is a folder" 3 "$tmp: error: is a directory, not a journal file" -- \
  "$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" --journal "$tmp"
# hostile YAML through every entry point: a loop, a billion laughs (no crash, no hang: exit 2)
printf 'catalog: &c {models: *c}\n' >"$tmp/loop.yaml"
expect "validate of an alias loop" 2 "loop.yaml:1:14: error: an alias (*name) refers to" -- "$bin" validate "$tmp/loop.yaml"
expect "run of an alias loop" 2 "loop.yaml:1:14: error: an alias (*name) refers to" -- "$bin" run "$tmp/loop.yaml"
expect "--set of an alias loop" 2 "--set catalog=&c {models: *c}: error: value: an alias" -- \
  "$bin" run --set 'catalog=&c {models: *c}'
printf 'budgets: &b {x: *b}\n' >"$tmp/loop-budgets.yaml"
expect "check --budgets of an alias loop" 2 "loop-budgets.yaml:1:14: error: an alias (*name)" -- \
  "$bin" check --budgets "$tmp/loop-budgets.yaml"
{
  echo 'a: &a [x, x, x, x, x, x, x, x, x, x]'
  prev=a
  for k in b c d e f g h i; do
    printf '%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n' $k $k $prev $prev $prev $prev $prev $prev \
      $prev $prev $prev $prev
    prev=$k
  done
} >"$tmp/laughs.yaml"
expect "validate of a billion laughs" 2 "laughs.yaml:6:1: error: the document stands for more than 200000" -- \
  "$bin" validate "$tmp/laughs.yaml"
# names that would be formulas in a spreadsheet are written as text
"$bin" run --duration 600 --set 'name==1+1' --format csv >"$tmp/out" 2>"$tmp/err"
check "a formula name in run CSV" grep -q "^1,run,'=1+1," "$tmp/out"
big=(--set sweep.sample=40 --set duration_s=300 --set warmup_s=30 --threads 2)  # JSON beyond a pipe's buffer
"$bin" sweep "$src/tests/data/gpu-check.yaml" "${big[@]}" --format json 2>"$tmp/err" | head -1 >"$tmp/out"
rc=${PIPESTATUS[0]}
check "sweep | head -1 exits 0 (was $rc)" [ "$rc" -eq 0 ]
check "sweep | head -1 prints its first line" grep -qx '{' "$tmp/out"
check "sweep | head -1 says nothing about the pipe" sh -c "! grep -qi 'pipe\|error' '$tmp/err'"
# a streamed sweep whose reader has gone stops quietly (how early depends on when the reader left;
# the full disk below, whose header already fails, shows that it stops)
"$bin" sweep "$src/tests/data/gpu-check.yaml" "${big[@]}" --format csv 2>"$tmp/err" | head -1 >"$tmp/out"
rc=${PIPESTATUS[0]}
check "sweep --format csv | head -1 exits 0 (was $rc)" [ "$rc" -eq 0 ]
check "sweep --format csv | head -1 prints the header" grep -q '^index,' "$tmp/out"
check "sweep --format csv | head -1 says nothing of it" sh -c "! grep -qi 'pipe\|error\|signal' '$tmp/err'"
if [ -w /dev/full ]; then
  expect "streamed sweep > /dev/full" 3 "" -- sh -c '"$1" sweep "$2/tests/data/gpu-check.yaml" --set sweep.sample=40 \
    --set duration_s=300 --set warmup_s=30 --threads 2 --format csv >/dev/full' sh "$bin" "$src"
  check "a streamed sweep says its full disk once" \
    [ "$(grep -c 'writing the output failed: No space left on device' "$tmp/err")" -eq 1 ]
  check "a streamed sweep on a full disk stops early" sh -c "! grep -q 'done:' '$tmp/err'"
fi
"$bin" merge "$tmp/shard0.json" "$tmp/shard1.json" "$tmp/shard2.json" --format json 2>"$tmp/err" | head -c 10 >/dev/null
rc=${PIPESTATUS[0]}
check "merge | head exits 0 (was $rc)" [ "$rc" -eq 0 ]
check "merge | head says nothing" [ ! -s "$tmp/err" ]

# progress: when stderr is not a terminal, a plain line at the end (and every few seconds)
"$bin" sweep "$src/tests/data/gpu-check.yaml" "${small[@]}" >/dev/null 2>"$tmp/err"
check "sweep ends its progress with one plain line" \
  grep -q "^fleetsim sweep: done: 12/12 configurations, 24/24 replications (8 not needed once their configuration's verdict was decided) in [0-9.]* s\$" "$tmp/err"
check "no progress bar on a file" sh -c "! grep -q '\[#' '$tmp/err'"

"$bin" sweep "$src/tests/data/tiny-sweep.yaml" --threads 2 >/dev/null 2>"$tmp/err"
# (its max_num_seqs 128 never fills, so those runs serve the 32s: docs/model.md, "Sweeps, ...")
check "a tiny sweep ends with its counts" \
  grep -qx 'fleetsim sweep: done: 4/4 configurations, 8/8 replications (4 served by a run of other engine limits) in [0-9.]* s' "$tmp/err"
check "progress to a file is plain lines, no carriage returns" sh -c "! grep -q \"\$(printf '\\r')\" '$tmp/err'"
check "progress to a file: the announcement and the done line, nothing else" [ "$(wc -l <"$tmp/err")" -eq 2 ]

# the sweep table widens a column for a long device name: every row lines up with its header
long=acme-inference-accelerator-with-a-long-name
expect "sweep with a long device name" 0 "" -- "$bin" sweep "$src/tests/data/tiny-sweep.yaml" --threads 2 \
  --set "catalog.devices.$long={memory_gib: 96, bandwidth_gb_s: 4000, bf16_tflops: 1200, usd_per_hour: 99999}" \
  --set "sweep.parameters.device=[h100-sxm-80gb, $long]"
check "the sweep table lines up" python3 - "$tmp/out" <<'PY'
import sys
end = None
for line in open(sys.argv[1], encoding="utf-8").read().splitlines():
    if line.endswith(" reject  feasible"):
        end = len(line) - len("  feasible")
    elif end is not None and "%  " in line:
        assert line.rindex("%  ") + 1 == end, line
        assert "acme" not in line or "-with-a-long-name " in line, line
PY

# journals: a sweep stopped by SIGINT, then by SIGTERM, resumes to the uninterrupted result
jscen=(--set sweep.sample=400 --set duration_s=1200)  # a few seconds on one thread
"$bin" sweep "$src/tests/data/gpu-check.yaml" "${jscen[@]}" --threads 2 --format json >"$tmp/uninterrupted.json" 2>/dev/null
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# wait (at most 2 minutes) for the journal to hold N lines; a killed sweep must still be running
wait_lines() { local i; for i in $(seq 1200); do [ "$(lines "$1")" -ge "$2" ] && return 0; sleep 0.1; done; return 1; }
# background jobs of a script ignore SIGINT unless told otherwise
env --default-signal=INT "$bin" sweep "$src/tests/data/gpu-check.yaml" "${jscen[@]}" --threads 1 --format json \
  --journal "$tmp/journal.jsonl" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_lines "$tmp/journal.jsonl" 6
kill -INT "$pid"
wait "$pid"
rc=$?
n1=$(lines "$tmp/journal.jsonl")
check "SIGINT exits 130 (was $rc)" [ "$rc" -eq 130 ]
check "an interrupted sweep prints no document" [ ! -s "$tmp/out" ]
check "SIGINT: the journal holds the finished configurations ($n1 lines)" [ "$n1" -gt 1 -a "$n1" -lt 401 ]
check "SIGINT: says how many finished" grep -q "stopped by SIGINT with $((n1 - 1)) of 400 configurations finished; they are in $tmp/journal.jsonl" "$tmp/err"
check "SIGINT: says how to resume" grep -q "^resume with: .* --resume $tmp/journal.jsonl$" "$tmp/err"
resume=$(sed -n 's/^resume with: //p' "$tmp/err")
read -ra resume_args <<<"$resume"  # (the test's paths have no spaces)
"${resume_args[@]}" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_lines "$tmp/journal.jsonl" $((n1 + 5))
kill -TERM "$pid"
wait "$pid"
rc=$?
n2=$(lines "$tmp/journal.jsonl")
check "SIGTERM exits 143 (was $rc)" [ "$rc" -eq 143 ]
check "SIGTERM: the journal grew ($n1 -> $n2 lines)" [ "$n2" -gt "$n1" -a "$n2" -lt 401 ]
check "SIGTERM: resumed from the journal" grep -q "resuming $tmp/journal.jsonl with $((n1 - 1)) configurations finished" "$tmp/err"
expect "resume to the end" 0 "" -- "${resume_args[@]}"
check "the resumed sweep is byte-identical to the uninterrupted one" cmp -s "$tmp/out" "$tmp/uninterrupted.json"
check "the journal is complete ($(lines "$tmp/journal.jsonl") lines)" [ "$(lines "$tmp/journal.jsonl")" -eq 401 ]
expect "journal of another sweep" 2 "journal.jsonl:1: error: /scenario/overrides" -- \
  "$bin" sweep "$src/tests/data/gpu-check.yaml" --set sweep.sample=300 --resume "$tmp/journal.jsonl"
expect "a journal is not overwritten" 2 "journal.jsonl: error: the journal exists and may hold finished configurations" -- \
  "$bin" sweep "$src/tests/data/gpu-check.yaml" "${jscen[@]}" --journal "$tmp/journal.jsonl"

# fleetsim fit: a profile from benchmark results, used by a run; located errors
cat >"$tmp/bench.csv" <<'CSV'
model,device,tp,isl,osl,concurrency,mean_ttft_ms,mean_tpot_ms
meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,512,64,1,25,7.5
meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,512,64,4,40,8.0
meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,2048,64,2,90,8.5
meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,2048,64,8,260,10.5
CSV
expect "fit" 0 "" -- "$bin" fit "$tmp/bench.csv" --folds 0 -o "$tmp/profile.yaml" --threads 2
check "fit wrote a profile" grep -q '^profile: h100-sxm-80gb/llama-3.1-8b/tp1$' "$tmp/profile.yaml"
check "fit prints its quality" grep -q 'mean_tpot' "$tmp/out"
expect "run with the fitted profile" 0 "" -- "$bin" run --duration 600 --set engine.perf_profile="$tmp/profile.yaml" --format json
check "the run names the profile" grep -q '"profile": "h100-sxm-80gb/llama-3.1-8b/tp1"' "$tmp/out"
expect "fit of a missing file" 2 "nonesuch.csv: error: cannot open benchmark file" -- "$bin" fit "$tmp/nonesuch.csv"
printf '{"hello": 1}\n' >"$tmp/odd.json"
expect "fit of an unknown JSON" 2 "odd.json: error: not a benchmark result" -- "$bin" fit "$tmp/odd.json"
head -2 "$tmp/bench.csv" >"$tmp/two.csv"
expect "fit of too few points" 2 "1 usable benchmark points" -- "$bin" fit "$tmp/two.csv"
# --model, --device and --tp fill in what results leave out: one the catalog lacks, or the results
# contradict, is refused rather than dropped
expect "fit --model the catalog lacks" 2 "error: --model nope: not a catalog model" -- "$bin" fit "$tmp/bench.csv" --model nope
expect "fit --device the catalog lacks" 2 "error: --device h1000: not a catalog device" -- "$bin" fit "$tmp/bench.csv" --device h1000
expect "fit --model the results contradict" 2 \
  "bench.csv:2: error: this result names its model (meta-llama/Llama-3.1-8B-Instruct), not --model qwen3-32b" -- \
  "$bin" fit "$tmp/bench.csv" --model qwen3-32b
expect "fit --tp the results contradict" 2 "this result names its tp (1), not --tp 2" -- "$bin" fit "$tmp/bench.csv" --tp 2
expect "fit with the flags the results agree with" 0 "" -- "$bin" fit "$tmp/bench.csv" --device h100 --model llama-3.1-8b \
  --tp 1 --folds 0
{ cat "$tmp/bench.csv"; echo 'meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,512,64,2,30,7.7,9'; } >"$tmp/long.csv"
expect "fit of a row longer than its header" 2 "long.csv:6: error: the header has 8 fields, this row 9 with a value in" -- \
  "$bin" fit "$tmp/long.csv"
sed 's/H100-SXM/A100-80GB/' "$tmp/bench.csv" | tail -2 >>"$tmp/bench2.csv"
cat "$tmp/bench.csv" "$tmp/bench2.csv" >"$tmp/mixed.csv"
expect "fit across devices" 2 "a profile is fitted for one device" -- "$bin" fit "$tmp/mixed.csv"
expect "fit --global across devices" 0 "" -- "$bin" fit --global "$tmp/mixed.csv" -o "$tmp/physics.yaml" --threads 2 \
  --requests-per-client 2
check "fit --global prints each device left out" grep -q 'leave one device out' "$tmp/out"
check "fit --global writes coefficients for any device" grep -q '^device: any$' "$tmp/physics.yaml"
expect "a run on refitted physics coefficients" 0 "" -- "$bin" run --duration 600 \
  --set engine.perf_profile="$tmp/physics.yaml" --format json
check "the run says it ran the physics model" grep -q '"model": "physics"' "$tmp/out"
expect "fit --global of step timings" 2 "excludes" -- "$bin" fit --global --steps "$tmp/bench.csv"
printf 'model,device,tp,isl,osl,concurrency\nx,H100-SXM,1e12,1,1,1\n' >"$tmp/badtp.csv"
expect "fit of an out-of-range tp" 2 "badtp.csv:2: error: column tp: expected an integer in [1, 64], not '1e12'" -- \
  "$bin" fit "$tmp/badtp.csv"
printf 'model,device,prefill_tokens,decode_seqs,decode_context_tokens,step_ms\nmeta-llama/Llama-3.1-8B,H100-SXM,0,4,100,0\n' \
  >"$tmp/steps.csv"
expect "fit --steps of a step that takes no time" 2 "steps.csv:2: error: column step_ms" -- "$bin" fit --steps "$tmp/steps.csv"
expect "fit to an unwritable profile" 3 "" -- "$bin" fit "$tmp/bench.csv" --folds 0 --threads 2 -o "$tmp/no/such/dir/p.yaml"
check "fit says why the profile was not written" grep -q "p.yaml: error: writing the profile failed: No such file" "$tmp/err"
expect "a run on a profile of another device" 2 "not to other devices (set engine.perf_profile=auto for a shipped" -- \
  "$bin" run --set device=a100-80gb --set engine.perf_profile="$tmp/profile.yaml"
expect "the default on another device says how to switch its profile" 2 "set engine.perf_profile=auto" -- \
  "$bin" run --set device=l4-24gb
"$bin" sweep "$src/tests/data/tiny-sweep.yaml" --format csv --shard 0/2 >"$tmp/shard0.csv" 2>/dev/null
expect "merge of a CSV shard says which format merges" 2 \
  "shard0.csv:1:1: error: a sweep's CSV or table output, not a shard document: merge reads the JSON" -- \
  "$bin" merge "$tmp/shard0.csv"
expect "an unknown shipped profile" 2 "no shipped performance profile 'h100-sxm-80gb/nonesuch'" -- \
  "$bin" run --set engine.perf_profile=h100-sxm-80gb/nonesuch

# fleetsim check: 0 pass, 1 violated (JUnit and Markdown written), 2 input error
ex="$src/examples/ci/chat-fleet.yaml"
expect "check catches the peak-window miss" 1 "" -- "$bin" check "$ex" --threads 2 --junit "$tmp/check.xml" --markdown "$tmp/check.md"
check "check names the failed budget" grep -q "FAIL  peak-p99-ttft" "$tmp/out"
check "check JUnit has one failure" grep -q 'failures="1"' "$tmp/check.xml"
check "check Markdown summary" grep -q "fails" "$tmp/check.md"
expect "check passes with a looser threshold" 0 "" -- "$bin" check "$ex" --threads 2 --set budgets.peak-p99-ttft.max=5 --format json
check "check json says pass" grep -q '"pass": true' "$tmp/out"
GITHUB_ACTIONS=true "$bin" check "$ex" --threads 2 >"$tmp/gha" 2>&1
check "check annotates a violated budget at its line" grep -q "^::error file=.*chat-fleet.yaml,line=31," "$tmp/gha"
printf 'budgets:\n  x: {metric: latency_s.ttft.p99, maxx: 1}\n' >"$tmp/bad-budgets.yaml"
expect "check of a misspelled budget key" 2 "bad-budgets.yaml:2:" -- "$bin" check "$ex" --budgets "$tmp/bad-budgets.yaml"
# an input error still writes the JUnit and Markdown a pipeline publishes, and an annotation in GitHub Actions
rm -f "$tmp/err.xml" "$tmp/err.md"
expect "check of a misspelled budget key, reports asked for" 2 "bad-budgets.yaml:2:" -- \
  "$bin" check "$ex" --budgets "$tmp/bad-budgets.yaml" --junit "$tmp/err.xml" --markdown "$tmp/err.md"
check "check's JUnit carries the input error at its file and line" \
  bash -c "grep -q 'errors=\"1\"' '$tmp/err.xml' && grep -q 'line=\"2\"' '$tmp/err.xml' && grep -q 'bad-budgets.yaml:2:' '$tmp/err.xml'"
check "check's Markdown says it could not run" grep -q "could not run" "$tmp/err.md"
GITHUB_ACTIONS=true "$bin" check "$ex" --budgets "$tmp/bad-budgets.yaml" >"$tmp/gha" 2>/dev/null
check "check annotates an input error at its line" grep -q "^::error file=.*bad-budgets.yaml,line=2,col=" "$tmp/gha"
# beside --format json the annotation goes to stderr: stdout stays the JSON's (empty on an error)
GITHUB_ACTIONS=true "$bin" check "$ex" --budgets "$tmp/bad-budgets.yaml" --format json >"$tmp/gha" 2>"$tmp/gha.err"
check "check's input-error annotation leaves JSON's stdout alone" bash -c "[ ! -s '$tmp/gha' ] && grep -q '^::error file=' '$tmp/gha.err'"
expect "check without budgets" 2 "no budgets section" -- "$bin" check "$src/scenarios/chat-default.yaml"
expect "check with the budgets section replaced by --set" 2 "--set budgets=5: error: budgets: expected a mapping" -- \
  "$bin" check "$ex" --set budgets=5
expect "validate counts the budgets" 0 "" -- "$bin" validate "$ex"
check "validate says 5 budgets" grep -q '; 5 budgets)$' "$tmp/out"
# a scenario read from a pipe is read once: its budgets come from the same text
expect "validate of a scenario on a pipe counts its budgets" 0 "" -- bash -c "cat '$ex' | '$bin' validate /dev/stdin"
check "validate of a pipe says 5 budgets" grep -q '; 5 budgets)$' "$tmp/out"
expect "check refuses one file for --junit and --markdown" 2 "--markdown: error: --markdown $tmp/same.out is the file --junit names" -- \
  "$bin" check "$ex" --junit "$tmp/same.out" --markdown "$tmp/same.out"
# an error a --set caused is no file to annotate: the annotation names the --set
GITHUB_ACTIONS=true "$bin" check "$ex" --set budgets.peak-p99-ttft.window_s=100000 --junit "$tmp/set.xml" >"$tmp/gha" 2>/dev/null
check "check annotates a --set's error without a file" grep -q "^::error title=fleetsim check%3A input error::--set budgets.peak-p99-ttft.window_s=100000: " "$tmp/gha"
check "check's JUnit names no file for a --set's error" bash -c "! grep -q 'file=\"--set' '$tmp/set.xml'"
expect "report to a closed pipe" 0 "" -- bash -o pipefail -c "'$bin' report '$src/scenarios/chat-default.yaml' --set duration_s=600 | head -c 10 >/dev/null"
expect "fit --steps refuses --device, which step timings name on every row" 2 "--steps excludes --device" -- "$bin" fit --steps "$tmp/bench.csv" --device h100-sxm-80gb
{ cat "$src/scenarios/chat-default.yaml"; printf 'budgets:\n  a: {metric: nope, max: 1}\n'; } >"$tmp/nope-budget.yaml"
expect "validate checks a budget's metric as check does" 2 "nope-budget.yaml:36:15: error: budgets.a: 'nope' is not a number" -- \
  "$bin" validate "$tmp/nope-budget.yaml"
# an output that names the scenario by another path is refused, and not written even as the error's report
cp "$ex" "$tmp/cf.yaml"
expect "check's Markdown onto its own scenario" 2 "names an input of this command" -- \
  "$bin" check "$tmp/cf.yaml" --threads 2 --markdown "$tmp/./cf.yaml"
check "check left its scenario as it was" cmp -s "$ex" "$tmp/cf.yaml"
printf 'seed: [\n' >"$tmp/broken.yaml"
expect "check of a broken scenario, its JUnit onto it" 2 "broken.yaml:" -- \
  "$bin" check "$tmp/broken.yaml" --junit "$tmp/./broken.yaml"
check "check left the broken scenario as it was" bash -c "[ \"\$(cat '$tmp/broken.yaml')\" = 'seed: [' ]"
expect "check with an unwritable JUnit file" 3 "" -- "$bin" check "$ex" --threads 2 --junit "$tmp/no/such/dir/j.xml"
# nor is a file the scenario reads: its trace
mkdir -p "$tmp/replay/traces"
cp "$src/scenarios/azure-conv-replay.yaml" "$tmp/replay/"
cp "$src/scenarios/traces/azure-llm-2023-conv.csv" "$tmp/replay/traces/"
printf 'budgets:\n  p99-ttft: {metric: latency_s.ttft.p99, max: 100}\n' >>"$tmp/replay/azure-conv-replay.yaml"
expect "report over the trace its scenario replays" 2 "names an input of this command" -- \
  "$bin" report "$tmp/replay/azure-conv-replay.yaml" --set duration_s=600 -o "$tmp/replay/./traces/azure-llm-2023-conv.csv"
expect "check's JUnit over the trace its scenario replays" 2 "names an input of this command" -- \
  "$bin" check "$tmp/replay/azure-conv-replay.yaml" --set duration_s=600 --junit "$tmp/replay/traces/azure-llm-2023-conv.csv"
check "the trace is as it was" cmp -s "$src/scenarios/traces/azure-llm-2023-conv.csv" "$tmp/replay/traces/azure-llm-2023-conv.csv"
# fleetsim report: HTML from a scenario, a run document, a sweep document
expect "report of a scenario" 0 "" -- "$bin" report "$src/scenarios/committed-and-spot.yaml" -o "$tmp/r.html"
cp "$src/scenarios/chat-default.yaml" "$tmp/UPPER.YAML"
expect "report of a scenario whose extension is in capitals" 0 "" -- "$bin" report "$tmp/UPPER.YAML" --set duration_s=600 -o "$tmp/r3.html"
check "report has every run chart" bash -c "grep -q 'id=\"ledger\"' '$tmp/r.html' && grep -q 'id=\"timeline\"' '$tmp/r.html'"
"$bin" run --duration 600 --format json >"$tmp/run.json"
expect "report of a run document" 0 "" -- "$bin" report "$tmp/run.json" -o "$tmp/r2.html"
expect "report --threads of a JSON result" 2 "--threads: error: --threads sets the threads that run a scenario's timeline" -- \
  "$bin" report "$tmp/run.json" --threads 2 -o "$tmp/r3.html"
expect "report of a bad document" 2 "" -- "$bin" report "$src/README.md"
expect "report to an unwritable file" 3 "" -- "$bin" report "$tmp/run.json" -o "$tmp/no/such/dir/r.html"
# the autoscaler's rate policies: bad values are located errors
expect "a rate policy that allows no change" 2 "scale_up_policy allows no change" -- \
  "$bin" validate "$src/scenarios/autoscale-host-cpu.yaml" --set "fleet.autoscale.scale_up_policy={pods: 0}"
expect "a rate policy that is a number" 2 "expected {pods, percent, period_s} or \`none\`" -- \
  "$bin" validate "$src/scenarios/autoscale-host-cpu.yaml" --set fleet.autoscale.scale_down_policy=5
# the ledger exports
expect "ledger csv" 0 "" -- "$bin" run "$src/scenarios/committed-and-spot.yaml" --format ledger
check "ledger csv header" grep -q '^scope,name,kind,item,device_hours,usd_per_device_hour,usd$' "$tmp/out"
expect "focus csv" 0 "" -- "$bin" run "$src/scenarios/committed-and-spot.yaml" --format focus
check "focus csv has a committed row" grep -q ',Committed,' "$tmp/out"
expect "focus csv from a billing start" 0 "" -- \
  "$bin" run "$src/scenarios/committed-and-spot.yaml" --format focus --billing-start 2026-11-01
check "focus periods start at the billing start" grep -q ',2026-11-01T01:00:00Z,2026-11-01T00:00:00Z,Usage,' "$tmp/out"
expect "focus with a date that does not exist" 2 "--billing-start: expected a UTC date YYYY-MM-DD" -- \
  "$bin" run "$src/scenarios/committed-and-spot.yaml" --format focus --billing-start 2026-02-30
expect "billing start without focus" 2 "use it with --format focus" -- "$bin" run --billing-start 2026-11-01
expect "focus whose billing period would end after 9999" 2 "would end after 9999-12-31" -- \
  "$bin" run "$src/scenarios/committed-and-spot.yaml" --format focus --billing-start 9999-12-31T23:59:59Z

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
