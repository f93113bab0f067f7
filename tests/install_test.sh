#!/usr/bin/env bash
# The installed package works for another project: install this build into a temporary prefix,
# configure and build examples/cpp against it with find_package(fleetsim), run the C++ and C
# consumers, and check the pkg-config file and the installed CLI.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -f "$tmp/prefix/include/fleetsim/fleetsim.hpp"
test -f "$tmp/prefix/include/fleetsim/fleetsim.h"
! test -e "$tmp/prefix/include/fleetsim/scenario.hpp"  # internal headers stay internal
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src/examples/cpp" -B "$tmp/example" "${gen[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log"
cmake --build "$tmp/example" >"$tmp/build.log"
"$tmp/example/plan" | tee "$tmp/plan.out"
grep -q "cheapest under a 1 s p99 TTFT" "$tmp/plan.out"
grep -q "unknown key 'routr'" "$tmp/plan.out"
"$tmp/example/plan_c" | tee "$tmp/plan_c.out"
grep -q "schema_version 1" "$tmp/plan_c.out"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
test -f "$(pkg-config --variable=includedir fleetsim)/fleetsim/fleetsim.h"  # relocatable: found from the .pc file
# the C header is C, and the .pc file names everything a program linking the library needs
printf '#include <fleetsim/fleetsim.h>\nint main(void) { return fleetsim_version() == 0; }\n' >"$tmp/c_only.c"
cc -o "$tmp/c_only" "$tmp/c_only.c" $(pkg-config --cflags --libs fleetsim)
"$tmp/c_only"
"$tmp/prefix/bin/fleetsim" --version
echo "install: the installed package builds and runs a consumer project"
