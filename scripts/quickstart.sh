#!/usr/bin/env bash
# Everything from a fresh Debian 12 machine: install dependencies, build, install the library,
# the CLI and the Python module under /usr/local, and run the built-in default scenario, from the
# CLI and from Python.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo cmake --install build >/dev/null
echo
./build/fleetsim run
echo
/usr/bin/python3 -c "import fleetsim; print('from Python: cost', fleetsim.run()['cost'])"
