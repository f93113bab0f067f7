#!/usr/bin/env bash
# Configure and build into build/ (CUDA auto-detected). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f build/CMakeCache.txt ] && gen=()
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build --parallel "$(nproc)"
