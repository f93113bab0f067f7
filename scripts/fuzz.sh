#!/usr/bin/env bash
# Build the libFuzzer harnesses (fuzz/) with clang into build-fuzz/ and run each for SECONDS
# (default 60) on its seed corpus, fuzz/corpus/<harness>/. New interesting inputs go to
# build-fuzz/corpus/<harness>/, never into the repository; a crash, sanitizer report, timeout or
# out-of-memory input is saved under build-fuzz/artifacts/<harness>/ and makes this script exit
# non-zero. Usage: scripts/fuzz.sh [SECONDS] [HARNESS...]   (harnesses: scenario trace merge)
# Reproduce a finding: build-fuzz/fuzz/fuzz_<harness> FILE
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(scenario trace merge)

cxx=${FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (scripts/install-deps.sh installs clang)" >&2; exit 2; }
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  cat "$probe/err" >&2
  echo "fuzz: $cxx cannot link libFuzzer (-fsanitize=fuzzer); install libclang-rt-dev" >&2
  exit 2
fi

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f build-fuzz/CMakeCache.txt ] && gen=()
# (-g1: line tables, enough for a finding's symbolized stack; the library in batches: see
# scripts/sanitize.sh)
cmake -S . -B build-fuzz "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DFLEETSIM_FUZZ=ON -DFLEETSIM_TESTS=OFF \
  -DFLEETSIM_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build-fuzz --parallel "$(nproc)" --target "${harnesses[@]/#/fuzz_}"

# Symbolized stacks: llvm-symbolizer where installed, else addr2line (binutils).
sym=$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | tail -n 1 || true)
[ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH="$sym"
export ASAN_OPTIONS="${ASAN_OPTIONS:-allow_addr2line=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:allow_addr2line=1}"

declare -A max_len=([scenario]=8192 [trace]=16384 [merge]=65536)
failed=()
for h in "${harnesses[@]}"; do
  work=build-fuzz/corpus/$h art=build-fuzz/artifacts/$h
  mkdir -p "$work" "$art"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$h]:-65536}"
        -print_final_stats=1 -artifact_prefix="$art/")
  [ -f "fuzz/$h.dict" ] && args+=(-dict="fuzz/$h.dict")
  echo "== fuzz_$h: $seconds s (log: build-fuzz/fuzz_$h.log)"
  rc=0
  "build-fuzz/fuzz/fuzz_$h" "${args[@]}" "$work" "fuzz/corpus/$h" >"build-fuzz/fuzz_$h.log" 2>&1 || rc=$?
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
    "build-fuzz/fuzz_$h.log" || true
  if [ "$rc" -ne 0 ]; then
    failed+=("$h")
    tail -n 80 "build-fuzz/fuzz_$h.log" >&2
    echo "fuzz_$h: FINDING (exit $rc); input saved in $art/" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no findings"
