#!/usr/bin/env bash
# Runs on a GPU machine: records this build's baselines, one report per probe, named as
# reports/baselines/ names them (DATE-COMMIT-PROBE.json.gz, the commit and date read from the
# report itself), into OUT. A baseline must come from a clean tree: the script refuses to name
# a report whose tool block says git_dirty (it keeps it as PROBE-dirty.json.gz).
#
#   scripts/record-baselines.sh [BIN_DIR] [OUT] [PROBE...]
#     defaults: .gpu (scripts/gpu-bundle.sh), $OUT or ., and bandwidth capture-replay copy stages
#
# Each probe runs as the default suite runs it: bandwidth with the cuBLAS peer where libcublas
# loads (`--peer-optional`, the suite's own choice). Extra `moebench run` arguments for every
# probe: RECORD_ARGS (e.g. "--max-layers 8").
# Prints one line a probe (verdict tally and the file), appends every run's output to
# OUT/record-baselines.log, and exits non-zero if a run failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/.gpu}" && pwd) || exit 2
out=${2:-${OUT:-.}}
shift $(( $# < 2 ? $# : 2 ))
probes=("$@")
(( ${#probes[@]} )) || probes=(bandwidth capture-replay copy stages)
export MOEBENCH_FIXTURES=${MOEBENCH_FIXTURES:-$root/fixtures}
mkdir -p "$out"
status=0
for p in "${probes[@]}"; do
  tmp=$(mktemp -d)
  start=$(date +%s)
  suite_args=()
  [[ $p == bandwidth ]] && suite_args=(--peer-optional)
  # shellcheck disable=SC2086
  "$bin/moebench" run "$p" "${suite_args[@]}" ${RECORD_ARGS:-} -o "$tmp/$p.json" > "$tmp/$p.log" 2>&1; rc=$?
  (( rc != 0 )) && status=1
  name=$(python3 - "$tmp/$p.json" "$p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
tool, started = r["tool"], r["invocation"].get("started_at", "")
if tool.get("git_dirty", True):
    print(sys.argv[2] + "-dirty")
else:
    print(started[:10] + "-" + tool["git_commit"][:7] + "-" + sys.argv[2])
PY
  ) || name="$p-unreadable"
  [[ -f "$tmp/$p.json" ]] && gzip -c "$tmp/$p.json" > "$out/$name.json.gz"
  { echo "== $p"; cat "$tmp/$p.log"; } >> "$out/record-baselines.log"
  tally=$(grep -oE "^report: .*" "$tmp/$p.log" | tail -1)
  echo "$p rc=$rc $(( $(date +%s) - start ))s -> $name.json.gz $tally"
  rm -rf "$tmp"
done
exit $status
