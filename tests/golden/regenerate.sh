#!/usr/bin/env bash
# Rewrite the golden outputs (tests/golden/<name>.txt) from build/fleetsim, or the binary given.
# Every scenario in scenarios/ is recorded: a run scenario whole, a sweep scenario cut down to a
# sample of configurations. Each file's first line holds the fleetsim arguments that made it;
# tests/golden_test.sh reruns exactly those and compares. Run from anywhere; review the diff.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/fleetsim}
[ -x "$bin" ] || { echo "no fleetsim binary at $bin (build first: scripts/build.sh)" >&2; exit 2; }
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac

cases=()  # NAME|ARGS (arguments without spaces; paths relative to the repository root)
for f in scenarios/*.yaml; do
  name=$(basename "$f" .yaml)
  if grep -q '^sweep:' "$f"; then
    cases+=("$name|sweep $f --set sweep.sample=12 --set sweep.replications=2 --threads 2 --backend cpu --format json")
  else
    cases+=("$name|run $f --format json")
  fi
done

rm -f tests/golden/*.txt
for c in "${cases[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  read -ra argv <<<"$args"
  out=tests/golden/$name.txt
  {
    echo "# args: $args"
    "$bin" "${argv[@]}" 2>/dev/null | python3 tests/golden/golden.py flatten
  } >"$out"
  echo "$out: $(($(wc -l <"$out") - 1)) values"
done
