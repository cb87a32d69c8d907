#!/usr/bin/env bash
# Renders the HTML pages of the committed baselines (bandwidth, capture-replay, copy, stages) and
# of a comparison, and loads each in headless Chromium with scripts/check-page.js appended to a
# copy: it fails on any console message (a JS error, a resource that failed to load) and on any
# finding of that check (plots and their series missing, a point or a label outside its plot, an
# axis without ticks, anything fetched). Exit 77 (skipped) when no Chromium is installed.
#
# Usage: scripts/check-page.sh [MOEBENCH_BINARY]     (default: build/apps/moebench;
#        MOEBENCH_CHROMIUM: the browser, default chromium on PATH)
#        scripts/check-page.sh --screenshots DIR [MOEBENCH_BINARY]
#   --screenshots also writes DIR/{bandwidth,capture-replay,stages,compare}.png (docs/images).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shots=""
if [[ ${1:-} == --screenshots ]]; then shots=$2; shift 2; fi
bin=${1:-${MOEBENCH_BUILD_DIR:-$root/build}/apps/moebench}
[[ -x $bin ]] || { echo "check-page: $bin not found; build first (scripts/build.sh)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")  # the comparison runs in another folder

# MOEBENCH_CHROMIUM names the browser; otherwise the first of these on PATH.
browser=${MOEBENCH_CHROMIUM:-}
if [[ -z $browser ]]; then
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
  done
fi
if [[ -z $browser || ! -x $browser ]]; then
  echo "SKIPPED: no chromium installed (scripts/setup.sh installs it)${browser:+: $browser is not an executable}; the pages were not checked in a browser"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A profile of its own, so that a browser the user has open is neither reused nor disturbed.
flags=(--headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check
       --disable-extensions --disable-background-networking --user-data-dir="$tmp/profile"
       --force-device-scale-factor=1 --hide-scrollbars)

newest() { "$root/scripts/newest-baseline.sh" h200 "$1"; }

failed=0
# check NAME QUERY: load $tmp/NAME.html with the check appended; QUERY holds its expectations.
check() {
  local name=$1 query=$2 page="$tmp/$1.html" checked="$tmp/$1.checked.html"
  # The page ends "</body>\n</html>": the check goes just before </body>.
  { sed '/^<\/body>$/,$d' "$page"; echo "<script>"; cat "$root/scripts/check-page.js"
    echo "</script>"; echo "</body>"; echo "</html>"; } > "$checked"
  local status=0
  timeout 120 "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom \
    "file://$checked?$query" > "$tmp/$name.dom" 2> "$tmp/$name.log" || status=$?
  local result
  result=$(awk '/<pre id="moebench-check">/ { on = 1; sub(/.*<pre id="moebench-check">/, "") }
                on { if (sub(/<\/pre>.*/, "")) { print; exit } print }' "$tmp/$name.dom")
  # Console messages of the page (errors, uncaught exceptions, failed loads) in Chromium's log.
  local console
  console=$(grep -E 'CONSOLE|Uncaught' "$tmp/$name.log" || true)
  if [[ $status -ne 0 ]]; then
    echo "FAIL $name: chromium exited $status"; tail -n 20 "$tmp/$name.log"; failed=1
  elif [[ -n $console ]]; then
    echo "FAIL $name: console messages:"; echo "$console"; failed=1
  elif [[ $result != OK* ]]; then
    echo "FAIL $name: ${result:-the in-page check did not run}"; failed=1
  else
    echo "ok   $name: $result"
  fi
  if [[ -n $shots ]]; then
    local height=${3:-}
    [[ -z $height ]] && return 0
    timeout 120 "$browser" "${flags[@]}" --window-size="1180,$height" --screenshot="$shots/$name.png" \
      "file://$page" > /dev/null 2>&1
    echo "     screenshot $shots/$name.png ($(stat -c %s "$shots/$name.png") bytes)"
  fi
}

# render PROBE: the baseline's page at $tmp/PROBE.html (its report at $tmp/PROBE.json).
render() {
  local file; file=$(newest "$1")
  [[ -n $file ]] || { echo "check-page: no baseline of $1 in reports/baselines/h200" >&2; exit 2; }
  gunzip -c "$file" > "$tmp/$1.json"
  "$bin" render "$tmp/$1.json" --format html -o "$tmp/$1.html"
}

[[ -n $shots ]] && mkdir -p "$shots"
for probe in bandwidth capture-replay copy stages; do render "$probe"; done
# A comparison with cases missing from the head: the base less one shape's bf16 cases at M=64.
"$bin" render "$tmp/bandwidth.json" --format json -o "$tmp/head.json" \
  --filter '^(?!.*shape=gpt-oss-20b/m=64/format=bf16/)'

cmp_status=0
(cd "$tmp" && "$bin" compare bandwidth.json head.json --format html -o compare.html) || cmp_status=$?
[[ $cmp_status -le 1 ]] || { echo "check-page: moebench compare exited $cmp_status" >&2; exit 2; }

# The baselines' shapes: 4 shapes x (GB/s, time per layer); GB/s has bf16 and int4 in eager and
# graph (4 lines), time per layer adds a floor a format (6); the comparison draws base and head
# (GB/s 4 + 4, time 4 + 4 + 2 floors).
check bandwidth "line=8&bar=0&stacked=0&spread=1&series-line=4,6&series-spread=2" 1500
check capture-replay "line=0&stacked=1&spread=1&series-stacked=3&series-spread=2" 1100
check copy "line=0&stacked=0&spread=1&series-spread=1"
check stages "line=0&stacked=1&spread=1&series-stacked=4&series-spread=2" 1200
check compare "line=8&spread=1&series-line=8,10&series-spread=3&id=missing" 1500
exit $failed
