#!/usr/bin/env bash
# `pip install .` and `pip install -e .` into a fresh venv, offline (no index), then
# `import fleetsim; fleetsim.run()`. The venv is made from a Python other than Debian's where one
# is present (pyenv's), else from Debian's: the module must install where Python users are.
#   pip_install_test.sh SOURCE_DIR
set -euo pipefail
src=$1
py=""
for c in "$HOME"/.pyenv/versions/*/bin/python3 $(command -v -a python3 2>/dev/null || true); do
  [ -x "$c" ] || continue
  case "$(readlink -f "$c")" in /usr/bin/*) continue ;; esac
  "$c" -c 'import venv, ensurepip' 2>/dev/null || continue
  py=$c
  break
done
if [ -z "$py" ]; then
  py=/usr/bin/python3
  "$py" -c 'import ensurepip' 2>/dev/null || { echo "pip_install: no venv-capable Python (python3-venv)"; exit 77; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv "$tmp/venv"
run_check() {  # the module imports from the venv, not the source tree, and runs the default scenario
  (cd "$tmp" && "$tmp/venv/bin/python" - "$1" <<'PY'
import sys
import fleetsim
assert sys.prefix != sys.base_prefix, "not in the venv"
r = fleetsim.run()
assert r["cost"]["total_usd"] > 0
print(f"pip_install: {sys.argv[1]}: fleetsim from {fleetsim.__file__} on Python {sys.version.split()[0]}")
PY
  )
}
if ! "$tmp/venv/bin/pip" install --no-index --no-cache-dir "$src" >"$tmp/log" 2>&1; then
  tail -40 "$tmp/log"
  echo "FAIL: pip install . into a venv of $py"
  exit 1
fi
run_check "pip install ."
"$tmp/venv/bin/pip" uninstall -y -q fleetsim
if ! "$tmp/venv/bin/pip" install --no-index --no-cache-dir -e "$src" >"$tmp/log" 2>&1; then
  tail -40 "$tmp/log"
  echo "FAIL: pip install -e . into a venv of $py"
  exit 1
fi
run_check "pip install -e ."
