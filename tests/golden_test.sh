#!/usr/bin/env bash
# Golden outputs: every scenario's JSON result must reproduce each `path = value` line recorded
# in tests/golden/<name>.txt (new fields may appear). Regenerate with tests/golden/regenerate.sh.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 2  # scenario paths (and the "source" they report) are relative to the repository root
fail=0
for g in tests/golden/*.txt; do
  [ -e "$g" ] || continue
  name=$(basename "$g" .txt)
  header=$(head -1 "$g")
  case "$header" in
    "# args: "*) ;;
    *) echo "FAIL: $name: $g does not start with '# args: ...'"; fail=1; continue ;;
  esac
  read -ra argv <<<"${header#\# args: }"
  if ! "$bin" "${argv[@]}" >"$tmp/$name.json" 2>"$tmp/err"; then
    echo "FAIL: $name: fleetsim ${argv[*]} exited with an error"
    sed 's/^/  stderr: /' "$tmp/err" | head -5
    rm -f "$tmp/$name.json"
    fail=1
  fi
done
# one checker for all of them (it names the scenario and the path of every value that changed)
python3 tests/golden/golden.py check tests/golden "$tmp" || fail=1
[ "$fail" -eq 0 ]
