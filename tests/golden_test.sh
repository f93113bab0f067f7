#!/usr/bin/env bash
# Golden outputs: every scenario's JSON result must reproduce each `path = value` line recorded
# in tests/golden/<name>.txt (new fields may appear). Regenerate with tests/golden/regenerate.sh.
# Usage: golden_test.sh FLEETSIM SOURCE_DIR [NAME...]   (names: only those goldens; default all)
set -u
bin=$1
src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 2  # scenario paths (and the "source" they report) are relative to the repository root
fail=0
goldens=()
if [ $# -gt 0 ]; then
  for n in "$@"; do goldens+=("tests/golden/$n.txt"); done
else
  goldens=(tests/golden/*.txt)
fi
for g in "${goldens[@]}"; do
  [ -e "$g" ] || { echo "FAIL: no golden $g"; fail=1; continue; }
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
mkdir "$tmp/golden"
cp "${goldens[@]}" "$tmp/golden/" 2>/dev/null
python3 tests/golden/golden.py check "$tmp/golden" "$tmp" || fail=1
[ "$fail" -eq 0 ]
