#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build the CUDA backend (or use a portable build carried in
# build-gpu/), check that the CPU and CUDA backends give byte-identical results on a sweep of
# 1,024 configurations x 2 replications, on a two-pool fleet sweep (committed and spot capacity,
# reclaims, preemption) and on a sweep of sessions, disaggregated prefill and speculative decoding,
# and print the sweep benchmark: configurations per second on the GPU and
# on all CPU cores, the launch's occupancy and its memory per job. Finishes in minutes.
#
# Where the GPU machine lacks the Debian packages, build a portable binary (it needs only glibc and
# the driver) on a machine that has them, and bring build-gpu/fleetsim and build-gpu/tests/bench_sweep:
#   cmake -S . -B build-gpu -G Ninja -DFLEETSIM_PORTABLE=ON -DFLEETSIM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-gpu
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
nvidia-smi -L || { echo "gpu-check: no NVIDIA GPU visible"; exit 1; }

bin=build-gpu/fleetsim
if ! "$bin" --version >/dev/null 2>&1; then
  echo "gpu-check: building the CUDA backend"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLEETSIM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
  cmake --build build-gpu --parallel "$(nproc)"
fi

scenario=tests/data/gpu-check.yaml
echo "== CPU backend"
time "$bin" sweep "$scenario" --backend cpu --format json >"$out/cpu.json"
echo "== CUDA backend"
time "$bin" sweep "$scenario" --backend cuda --format json >"$out/cuda.json"
if cmp -s "$out/cpu.json" "$out/cuda.json"; then
  echo "gpu-check: CPU and CUDA agree byte for byte on $(grep -c '"index"' "$out/cpu.json") rows"
else
  echo "gpu-check: CPU and CUDA results DIFFER"
  diff <(tr ',' '\n' <"$out/cpu.json") <(tr ',' '\n' <"$out/cuda.json") | head -40
  exit 1
fi
# the same sweep on both backends, byte for byte: same_on_both NAME SCENARIO WHAT
same_on_both() {
  "$bin" sweep "$2" --backend cpu --format json >"$out/$1-cpu.json" 2>/dev/null
  "$bin" sweep "$2" --backend cuda --format json >"$out/$1-cuda.json" 2>/dev/null
  if cmp -s "$out/$1-cpu.json" "$out/$1-cuda.json"; then
    echo "gpu-check: CPU and CUDA agree byte for byte on $3 ($(grep -c '"index"' "$out/$1-cpu.json") rows)"
  else
    echo "gpu-check: CPU and CUDA results DIFFER on $2"
    diff <(tr ',' '\n' <"$out/$1-cpu.json") <(tr ',' '\n' <"$out/$1-cuda.json") | head -40
    exit 1
  fi
}
# the fleet dynamics and ledger tallies: two pools, committed and spot, reclaims, preemption
same_on_both fleet tests/data/gpu-check-fleet.yaml "the two-pool fleet sweep"
# 2026's mechanisms together: sessions, disaggregated prefill and decode, speculative decoding,
# bounded prefix caches with a host tier and a shared store, and prefix-aware routing
same_on_both mech tests/data/gpu-check-2026.yaml "the sessions + P/D + speculative + prefix-cache sweep"
# configurations per second on the GPU and on all CPU cores (a sample of the 10,000-configuration
# Azure conversation sweep, projected to the whole), the launch's occupancy and memory per job,
# the kernel's registers and local memory per thread
echo "== benchmark"
build-gpu/tests/bench_sweep tests/bench/azure-conv-10k.yaml --sample "${GPU_CHECK_SAMPLE:-2000}"
