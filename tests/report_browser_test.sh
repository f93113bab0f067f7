#!/usr/bin/env bash
# The HTML report as a browser renders it: report_browser_test.sh DRIVER SOURCE_DIR BUILD_DIR.
# DRIVER writes the pages of tests/data/report_{run,sweep}.json; headless chromium must keep every
# chart's <figure> and its <svg> in the DOM, and its screenshot (BUILD_DIR/report.png) must be a
# real image. Skipped (exit 77) where chromium is not installed.
set -uo pipefail
driver=$1 src=$2 out=$3
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
  echo "report_browser_test: chromium is not installed: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
err() { echo "FAIL: $*"; fail=1; }

"$driver" "$src/tests/data/report_run.json" "$work/run.html" "$src/tests/data/report_sweep.json" "$work/sweep.html" ||
  { echo "FAIL: the driver could not write the pages"; exit 1; }

# A fresh profile per call: chromium locks its profile directory.
browse() {
  local profile
  profile=$(mktemp -d "$work/profile.XXXX")
  timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-extensions --user-data-dir="$profile" "$@" 2>>"$work/chromium.log"
}

# page, then the figure ids it must have
check_dom() {
  local page=$1
  shift
  browse --dump-dom "file://$work/$page.html" >"$work/$page.dom" || err "$page: chromium --dump-dom failed"
  grep -q 'id="summary"' "$work/$page.dom" || err "$page: the summary is missing from the DOM"
  for id in "$@"; do
    grep -q "<figure id=\"$id\"><svg " "$work/$page.dom" || err "$page: figure $id or its <svg> is missing from the DOM"
  done
  # the parser dropped nothing: as many charts in the DOM as in the file
  local in_file in_dom
  in_file=$(grep -o '<svg ' "$work/$page.html" | wc -l)
  in_dom=$(grep -o '<svg ' "$work/$page.dom" | wc -l)
  [ "$in_file" -eq "$in_dom" ] && [ "$in_dom" -eq $# ] || err "$page: $in_file charts in the file, $in_dom in the DOM, $# expected"
}

check_dom run cost-per-token ledger latency-cdf timeline
check_dom sweep cost-per-token pareto latency-cdf

# screenshots: a PNG of real content, not a blank page
for page in run sweep; do
  png="$out/report.png"
  [ "$page" = sweep ] && png="$out/report_sweep.png"
  rm -f "$png"
  browse --screenshot="$png" --window-size=1280,2400 --hide-scrollbars "file://$work/$page.html" >/dev/null ||
    err "$page: chromium --screenshot failed"
  if [ ! -f "$png" ]; then
    err "$page: no screenshot written"
    continue
  fi
  size=$(stat -c %s "$png")
  [ "$size" -gt 20480 ] || err "$page: the screenshot is $size bytes (a blank page?)"
  [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || err "$page: the screenshot is not a PNG"
done

if [ "$fail" -ne 0 ]; then
  echo "chromium's messages:"
  tail -20 "$work/chromium.log"
  exit 1
fi
echo "report_browser_test: ok ($out/report.png, $out/report_sweep.png)"
