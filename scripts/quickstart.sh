#!/usr/bin/env bash
# Everything from a fresh Debian 12 machine: install dependencies, build, and run the built-in
# default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
echo
./build/fleetsim run
