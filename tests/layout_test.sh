#!/usr/bin/env bash
# scripts/check-layout.py: the repository passes, and a tree that breaks each rule is refused with
# the file and line of each breach.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
check="$here/scripts/check-layout.py"
fail=0
python3 "$check" "$here" || { echo "FAIL: the repository breaks its own layout rules"; fail=1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/libsim/low" "$tmp/libsim/high" "$tmp/libsim/core"
printf 'Owns: low things.\nMay include: core.\n' > "$tmp/libsim/low/README.md"
printf 'Owns: high things.\nMay include: low, core.\n' > "$tmp/libsim/high/README.md"
printf 'Owns: the core.\nMay include: nothing outside core/.\n' > "$tmp/libsim/core/README.md"
printf '#pragma once\n' > "$tmp/libsim/core/a.hpp"
printf '#include "a.hpp"\n' > "$tmp/libsim/core/b.hpp"
printf '#include "high/h.hpp"\n#include "core/a.hpp"\n' > "$tmp/libsim/low/l.cpp"  # line 1: upward
printf '#include "low/l.hpp"\n#include "gone.hpp"\n' > "$tmp/libsim/high/h.cpp"      # line 2: bare, absent
printf '#pragma once\n' > "$tmp/libsim/loose.cpp"
seq 601 | sed 's/^/\/\/ /' > "$tmp/libsim/high/long.cpp"
out=$(python3 "$check" "$tmp"); rc=$?
expect() {
  if ! grep -qF -- "$1" <<<"$out"; then echo "FAIL: expected '$1' in:"; echo "$out"; fail=1; fi
}
[ "$rc" = 1 ] || { echo "FAIL: exit $rc, expected 1"; fail=1; }
expect "libsim/low/l.cpp:1: low/ may not include high/"
expect "libsim/high/h.cpp:2: #include \"gone.hpp\" names no file beside it"
expect "libsim/loose.cpp: sits in libsim/ itself"
expect "libsim/high/long.cpp: 601 lines, over 600"
[ "$(grep -c . <<<"$out")" = 5 ] || { echo "FAIL: expected 4 problems and a summary, got:"; echo "$out"; fail=1; }

# a cycle between folders is named
printf 'Owns: low things.\nMay include: high, core.\n' > "$tmp/libsim/low/README.md"
out=$(python3 "$check" "$tmp")
expect "include each other in a cycle"
exit "$fail"
