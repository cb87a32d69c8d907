#!/usr/bin/env bash
# Prints the current baseline of PROBE on GPU: of reports/baselines/GPU/DATE-COMMIT-PROBE.json.gz,
# the one whose run started last (its invocation.started_at; the name alone orders two of one
# day by commit hash). Prints nothing when there is none.
#
#   scripts/newest-baseline.sh GPU PROBE
#
# MOEBENCH_BASELINES: the folder of GPU folders (default: the repository's reports/baselines).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
(($# == 2)) || { echo "usage: newest-baseline.sh GPU PROBE" >&2; exit 2; }
shopt -s nullglob
files=("${MOEBENCH_BASELINES:-$root/reports/baselines}/$1/"*-"$2".json.gz)
((${#files[@]})) || exit 0
for f in "${files[@]}"; do
  started=$(gunzip -c "$f" | python3 -c 'import json, sys; print(json.load(sys.stdin)["invocation"].get("started_at", ""))')
  printf '%s\t%s\n' "$started" "$f"
done | sort | tail -n 1 | cut -f2-
