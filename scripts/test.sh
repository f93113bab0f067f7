#!/usr/bin/env bash
# Install dependencies if needed, build, and run the whole test suite; then the tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh) and a short run of each
# fuzzer (scripts/fuzz.sh, where clang is installed). FLEETSIM_SANITIZE=0 skips the sanitizer
# suite; FLEETSIM_FUZZ_SECONDS sets the seconds per fuzzer (default 45; 0 skips fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
if [ "${FLEETSIM_SANITIZE:-1}" != 0 ]; then
  scripts/sanitize.sh
fi
fuzz_seconds=${FLEETSIM_FUZZ_SECONDS:-45}
if [ "$fuzz_seconds" != 0 ]; then
  if command -v clang++ >/dev/null; then
    scripts/fuzz.sh "$fuzz_seconds"
  else
    echo "test: clang++ not found, fuzzing skipped (scripts/install-deps.sh installs it)"
  fi
fi
