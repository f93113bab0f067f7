#!/usr/bin/env bash
# Install the Debian 12 packages fleetsim builds with (needs root or sudo). Nothing is downloaded
# outside Debian's archive. CUDA is optional: when nvcc is on the PATH the CUDA backend is built too.
# clang and its runtime libraries (libclang-rt-dev: libFuzzer, the sanitizers) build the fuzzers.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libyaml-cpp-dev libfmt-dev libcli11-dev nlohmann-json3-dev
      libeigen3-dev doctest-dev python3 clang clang-format libclang-rt-dev chromium
      python3-dev python3-venv python3-pybind11 pybind11-dev python3-pytest python3-pandas python3-matplotlib jupyter-nbconvert python3-ipykernel
      git python3-yaml python3-distributed)
# --cli: only what the CLI and library build with (no tests, Python module, fuzzers or browser)
if [ "${1:-}" = "--cli" ]; then
  pkgs=(build-essential cmake ninja-build pkg-config libyaml-cpp-dev libfmt-dev libcli11-dev nlohmann-json3-dev
        libeigen3-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
