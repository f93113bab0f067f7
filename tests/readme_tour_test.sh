#!/usr/bin/env bash
# Every command of the README's tour runs, so the tour cannot rot. The tour's ```sh blocks are
# run line by line in a scratch directory that sees the repository's scenarios, examples and
# tests and the built binary as build/fleetsim. A line must exit 0, or the code its comment
# names ("exit 1"). To keep this quick, sweeps run a sample of 4 configurations x 1 replication
# and fits skip cross-validation; everything else runs as written.
set -u
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build"
ln -s "$bin" "$work/build/fleetsim"
for d in scenarios examples tests profiles; do ln -s "$src/$d" "$work/$d"; done
cp "$src/scenarios/chat-default.yaml" "$work/my-scenario.yaml"  # the tour's "your own scenario"

pass=0
fail=0
n=0
while IFS= read -r line; do
  n=$((n + 1))
  want=0
  [[ "$line" =~ \#.*exit\ ([0-9]+) ]] && want=${BASH_REMATCH[1]}
  cmd=${line%%  #*}  # the command without its comment
  if [[ "$cmd" == *"fleetsim sweep "* ]]; then
    cmd=${cmd/fleetsim sweep /fleetsim sweep --set sweep.sample=4 --set sweep.replications=1 }
  fi
  [[ "$cmd" == *"fleetsim fit "* ]] && cmd=${cmd/fleetsim fit /fleetsim fit --folds 0 }
  (cd "$work" && timeout 300 bash -c "$cmd") >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" -eq "$want" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL (exit $rc, wanted $want): $line"
    sed 's/^/  stderr: /' "$work/err" | tail -5
  fi
done < <(awk '/^```sh$/ {on = 1; next} /^```$/ {on = 0} on && /^(build\/fleetsim|grep|for) /' "$src/README.md")

echo "readme tour: $pass of $n commands ran as documented, $fail failed"
[ "$n" -gt 20 ] && [ "$fail" -eq 0 ]
