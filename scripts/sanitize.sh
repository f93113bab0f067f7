#!/usr/bin/env bash
# Build the test suite with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and run
# it (ctest). Any sanitizer report fails its test, and this script exits non-zero. The compiler is
# cmake's default (gcc); CXX=clang++ scripts/sanitize.sh uses clang (on a fresh build-asan/).
# Extra arguments go to ctest (e.g. -R golden).
set -euo pipefail
cd "$(dirname "$0")/.."
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -g1: line tables, which is all a sanitizer's stack needs (function, file, line); full debug info
# made every compile about 40% longer. The library and CLI compile in batches (CMAKE_UNITY_BUILD:
# the headers they share parsed once a batch, half their CPU time); the tests one file each.
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f build-asan/CMakeCache.txt ] && gen=()
cmake -S . -B build-asan "${gen[@]}" -DFLEETSIM_CUDA=OFF -DFLEETSIM_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS="$san" -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-asan --parallel "$(nproc)" --target fleetsim fleetsim_tests report_html_driver
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allow_addr2line=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1:allow_addr2line=1}"
# the install test links a consumer without the sanitizer runtime, and the README tour repeats
# commands the cli test already runs: both run in the plain build only
ctest --test-dir build-asan --output-on-failure --parallel "$(nproc)" -E '^(install|readme_tour)$' "$@"
