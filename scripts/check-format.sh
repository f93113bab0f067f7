#!/usr/bin/env bash
# The C++ files follow .clang-format. `scripts/check-format.sh` checks every tracked C++ file;
# `scripts/check-format.sh REF` only those changed since REF (a pull request's base);
# `scripts/check-format.sh --fix [REF]` rewrites them instead. Exits 1 on a file that differs, 77
# when clang-format is not installed (scripts/install-deps.sh installs Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (apt-get install clang-format)"; exit 77; }
pattern=('*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
if [ $# -gt 0 ]; then
  mapfile -t files < <(git diff --name-only --diff-filter=d "$1" -- "${pattern[@]}")
else
  mapfile -t files < <(git ls-files -- "${pattern[@]}")
fi
[ ${#files[@]} -gt 0 ] || exit 0
if [ "$fix" = 1 ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run -Werror "${files[@]}"
fi
