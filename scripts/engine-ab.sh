#!/usr/bin/env bash
# Same-machine A/B of moebench builds, or of one build under different environment switches:
# runs `moebench run RUN_ARGS` once per configuration per round, the rounds interleaved so that
# the machine's drift lands on every configuration alike, then prints per case the GPU-time
# median of every round of every configuration and the change of the median of the rounds
# against the first configuration (a Markdown table, us).
#
#   scripts/engine-ab.sh [-r ROUNDS] [-d DIR] -c CONFIG [-c CONFIG ...] -- RUN_ARGS...
#   scripts/engine-ab.sh -s DIR [-c NAME ...]
#
#   -c CONFIG  NAME=BINARY[,VAR=VALUE...]: a name (letters, digits, . _ -), the moebench binary
#              it runs, and environment variables set for its runs; the first is the base
#   -r ROUNDS  rounds, at least 1 (default 3)
#   -d DIR     folder for the reports NAME-ROUND.json (default: a new ab-YYYYmmdd-HHMMSS folder)
#   -s DIR     print the table of DIR's reports again, nothing run (columns in -c order, else
#              by name)
#   RUN_ARGS   arguments of `moebench run` (not -o/--output: each run gets its own report)
#
# e.g. scripts/engine-ab.sh -c main=../main/build/apps/moebench -c new=build/apps/moebench \
#        -c new-off=build/apps/moebench,MOE_WARM_RANKING=0 -- bandwidth \
#        --shape deepseek-v2-lite --m 1,2,4 --mode graph --min-time 0.1 --max-samples 2000
# Exits 0 once the table is printed (a case whose verdict is not PASS is marked in it); 2: bad
# usage; a run that wrote no report stops the script with that run's exit code.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
fail() { echo "engine-ab.sh: $*" >&2; exit 2; }

rounds=3 dir="" summarise="" configs=()
while getopts "c:r:d:s:h" opt; do
  case $opt in
    c) configs+=("$OPTARG") ;;
    r) rounds=$OPTARG ;;
    d) dir=$OPTARG ;;
    s) summarise=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ ${1:-} == "--" ]] && shift

names=() binaries=() environments=()
for config in "${configs[@]}"; do
  name=${config%%=*}
  [[ $name =~ ^[A-Za-z0-9._-]+$ ]] ||
    fail "-c '$config': the name before '=' must be letters, digits, '.', '_' or '-'"
  for seen in "${names[@]}"; do [[ $seen != "$name" ]] || fail "-c '$config': the name '$name' is given twice"; done
  names+=("$name")
  rest=${config#*=}
  [[ $rest != "$config" ]] || rest=""
  binaries+=("${rest%%,*}")
  if [[ $rest == *,* ]]; then environments+=("${rest#*,}"); else environments+=(""); fi
done

summary() {
  python3 - "$1" "${names[@]}" <<'PY'
import glob, json, os, re, statistics, sys
folder, order = sys.argv[1], sys.argv[2:]
medians = {}  # case -> config -> [(round, median us)]
failed = set()
for path in glob.glob(os.path.join(folder, "*.json")):
    m = re.fullmatch(r"(.+)-(\d+)\.json", os.path.basename(path))
    if not m:
        continue
    config, round_ = m.group(1), int(m.group(2))
    with open(path) as f:
        report = json.load(f)
    for case in report["cases"]:
        gpu = case.get("measurements", {}).get("main", {}).get("gpu_time_us")
        if not gpu:
            continue
        medians.setdefault(case["key"], {}).setdefault(config, []).append((round_, gpu["median"]))
        if case.get("verdict") != "PASS":
            failed.add((case["key"], config))
configs = order or sorted({c for per in medians.values() for c in per})
if not medians:
    sys.exit(f"engine-ab.sh: no report NAME-ROUND.json with GPU times in {folder}")
base = configs[0]
print("| case | " + " | ".join(configs) + "".join(f" | {c} vs {base}" for c in configs[1:]) + " |")
print("| --- " * (2 * len(configs)) + "|")
for key in sorted(medians):
    cells, mid = [], {}
    for c in configs:
        runs = [v for _, v in sorted(medians[key].get(c, []))]
        mid[c] = statistics.median(runs) if runs else None
        cell = " ".join(f"{v:.1f}" for v in runs) or "-"
        cells.append(cell + (" (not PASS)" if (key, c) in failed else ""))
    for c in configs[1:]:
        ok = mid[c] is not None and mid[base] is not None
        cells.append(f"{mid[c] - mid[base]:+.1f}" if ok else "-")
    print(f"| {key} | " + " | ".join(cells) + " |")
PY
}

if [[ -n $summarise ]]; then
  [[ -d $summarise ]] || fail "-s '$summarise': no such folder"
  summary "$summarise"
  exit 0
fi

((${#names[@]} >= 1)) || fail "no configuration: give at least one -c NAME=BINARY"
[[ $rounds =~ ^[0-9]+$ ]] && ((rounds >= 1)) || fail "-r '$rounds' is not valid: a whole number of rounds, at least 1"
(($# > 0)) || fail "no RUN_ARGS after --: what should \`moebench run\` run?"
for arg in "$@"; do
  case $arg in
    -o | --output | --output=* | -o?*) fail "'$arg': each run writes its own report into the -d folder" ;;
  esac
done
for i in "${!names[@]}"; do
  [[ -x ${binaries[i]} ]] || fail "-c ${names[i]}: no moebench binary at '${binaries[i]}'"
done
dir=${dir:-ab-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$dir"

for ((r = 1; r <= rounds; r++)); do
  for i in "${!names[@]}"; do
    report=$dir/${names[i]}-$r.json
    echo "engine-ab.sh: round $r of $rounds, ${names[i]} -> $report" >&2
    rm -f "$report"
    IFS=, read -r -a vars <<<"${environments[i]}"
    status=0
    env "${vars[@]}" "${binaries[i]}" run "$@" --format json --quiet -o "$report" >/dev/null || status=$?
    if [[ ! -s $report ]]; then
      echo "engine-ab.sh: ${names[i]} round $r wrote no report (exit $status)" >&2
      exit $((status == 0 ? 1 : status))
    fi
  done
done
summary "$dir"
