#!/usr/bin/env bash
# Runs the GPU tests and a small moebench suite under compute-sanitizer's memcheck, racecheck,
# synccheck and initcheck, and writes a summary (Markdown) of what each tool said.
#
#   scripts/compute-sanitizer.sh [BIN_DIR]
#
# BIN_DIR: a build folder (apps/moebench, tests/test_*) or a flat folder holding moebench and
# the test_* binaries (copied to a GPU machine); default build/. Needs a GPU. Settings:
#   MOEBENCH_FIXTURES               shapes/ and cases/ for moebench (default: the repo's fixtures/)
#   MOEBENCH_SANITIZER_TOOLS        default "memcheck racecheck synccheck initcheck"
#   MOEBENCH_SANITIZER_TESTS        GPU test binaries to run (default: those of tests/gpu/ but
#                                   three, see below)
#   MOEBENCH_SANITIZER_SPLIT        1 (default): one run per test case of each test binary; 0:
#                                   one run per binary
#   MOEBENCH_SANITIZER_VARIANTS     runs every test case once per variant: variants separated by
#                                   spaces, each one or more VAR=VALUE joined by '+', e.g.
#                                   "MOE_TEST_FORMATS=bf16+MOE_TEST_M=1 MOE_TEST_FORMATS=int4", so
#                                   a case that outlasts a time limit under racecheck runs in
#                                   parts (default: one run, the environment as it is)
#   MOEBENCH_SANITIZER_TEST_ARGS     doctest arguments of every test binary (default: leave out
#                                   the test cases that plant a mutation on purpose and the
#                                   model shapes; see below)
#   MOE_TEST_M                      M values of test_moe_kernels' forward tests (default here
#                                   1,2,3,5,64: every kernel instantiation, a fifth of the cases)
#   MOE_TEST_SHAPES                 shape names the route comparisons of test_moe_kernels and
#                                   test_stages_probe's cases keep (default all; racecheck of a
#                                   model shape takes minutes, so run one shape a job)
#   MOE_TEST_FORMATS                bf16, int4 or both (default) for the cases of test_moe_kernels
#                                   and test_stages_probe that racecheck cannot finish in one go
#   MOE_TEST_PART                   k/n: the k-th of n shares of the inner cases of the slowest
#                                   cases of test_moe_kernels (graph replay, garbage routing, both
#                                   top-k, the routing features, the committed configs)
#   MOE_TEST_REPEAT                 1: test_moe_kernels' forward tests run each case a second
#                                   time and compare bits; 0 (default here): they leave it out,
#                                   as under a tool it repeats the first run's launches on the
#                                   same data and doubles the time
#   MOEBENCH_SANITIZER_RUN_ARGS     arguments of `moebench run` (default: the small settings below)
#   MOEBENCH_SANITIZER_PROBES       probes, each run on its own (default: the default suite of
#                                   `moebench list`); "suite" runs them all in one `moebench run`;
#                                   "none" runs no probe (test binaries only)
#   MOEBENCH_SANITIZER_TIMEOUT      seconds per tool and binary (default 1800)
#   MOEBENCH_SANITIZER_DEADLINE     seconds for the whole script (default none): each run's limit
#                                   is cut to what is left, and runs that would start after it
#                                   are listed as NOT RUN, so a lent machine's minutes still
#                                   give a summary
#   MOEBENCH_SANITIZER_JOBS         (tool, binary) runs at once (default 1); the tools slow the
#                                   host side as much as the kernels, so 4 to 6 jobs finish
#                                   several times sooner (under racecheck a test process grows
#                                   to 8-30 GB of host memory: 9 at once ran a 128 GB host out;
#                                   and runs of minutes share the GPU: 8 at once took 2-2.5x
#                                   as long a run as 4 at once, so 3 or 4 of those)
#   MOEBENCH_SANITIZER_ARGS         more compute-sanitizer options, for every run (default none),
#                                   e.g. "--kernel-name kns=route": check only some kernels
#                                   where a whole case outlasts a call (checked first: a
#                                   refused option is exit 2 before any run);
#                                   recorded in the summary, since such a CLEAN covers only those
#   MOEBENCH_SANITIZER_OUT          output folder (default compute-sanitizer-YYYYmmdd-HHMMSS)
#   COMPUTE_SANITIZER               the compute-sanitizer binary (default: PATH, then CUDA's bin)
#
# Exit status: 0 when every run was clean, 1 when a tool reported an error or racecheck a
# hazard (its warnings included: the "racecheck hazards" column), a run timed out or
# crashed, or a probe errored (exit 4: its kernels were not checked). A FAIL verdict (moebench
# exiting 1) is listed but is not a sanitizer finding: the tools slow kernels down 10-100x,
# which timing probes may notice. CUPTI cannot subscribe while compute-sanitizer does
# (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), hence --no-kernel-timing below.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build}" && pwd) || { echo "compute-sanitizer.sh: no folder '${1:-}'" >&2; exit 2; }

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [[ ! -x "$sanitizer" ]]; then
  echo "compute-sanitizer.sh: compute-sanitizer not found (install the CUDA toolkit's" \
       "cuda-sanitizer package or set COMPUTE_SANITIZER)" >&2
  exit 3
fi

find_binary() {  # name -> path in a build folder or a flat folder
  local name=$1
  for p in "$bin/$name" "$bin/apps/$name" "$bin/tests/$name"; do
    if [[ -x "$p" && -f "$p" ]]; then echo "$p"; return 0; fi
  done
  return 1
}

moebench=$(find_binary moebench) || { echo "compute-sanitizer.sh: no moebench in $bin" >&2; exit 2; }
if [[ -z "${MOEBENCH_FIXTURES:-}" && -d "$root/fixtures/shapes" ]]; then
  export MOEBENCH_FIXTURES=$root/fixtures
fi

if [[ -n "${MOEBENCH_SANITIZER_TESTS:-}" ]]; then
  read -r -a test_names <<<"$MOEBENCH_SANITIZER_TESTS"
else
  test_names=()
  for src in "$root"/tests/gpu/test_*.cpp "$root"/tests/gpu/test_*.cu; do
    name=$(basename "${src%.*}")
    # Left out, each covered otherwise: test_bug_probes and test_ep_bug_probes run the bug
    # probes under their mutations (sanitizer errors there are the bugs they plant; the clean
    # probes run below as the default suite). test_run_isolation plants an illegal address and interrupts a run by
    # its timing. test_copy_probe checks the copy probe's percentages, which a slowed read
    # ceiling breaks; `moebench run copy` below runs the same kernels.
    case $name in test_bug_probes|test_ep_bug_probes|test_run_isolation|test_copy_probe) continue ;; esac
    [[ -e "$src" ]] && test_names+=("$name")
  done
fi
# Test cases left out by default: those that plant a mutation on purpose, whose sanitizer
# errors would be the point, not a finding; and the model shapes of test_moe_kernels (the same
# kernels as the tiny shapes, every path, at sizes whose CPU reference alone takes minutes).
# doctest patterns: '*' and '?' (no spaces: the variable is split on them).
# MOEBENCH_SANITIZER_TEST_ARGS= (empty) runs every test case.
default_test_args="--test-case-exclude=*mutation*,forward?on?the?model?shapes*"
read -r -a test_args <<<"${MOEBENCH_SANITIZER_TEST_ARGS-$default_test_args}"
export MOE_TEST_M=${MOE_TEST_M-1,2,3,5,64}
export MOE_TEST_REPEAT=${MOE_TEST_REPEAT-0}

# The default suite on the smallest shapes, two layers an engine and few samples: every probe's
# kernels and host paths run, in minutes rather than hours under the slowest tool. CUPTI
# (kernel timing) is off: it and compute-sanitizer both attach to the same driver callbacks.
# No stream blocker: under the tools one enqueue can outlast its 10 s hold.
default_run_args="--shape tiny,tiny-partial-group --m 1,4 --min-samples 2 --max-samples 3
  --min-time 0 --max-noise 100 --timeout 10 --warmup 1 --copy-bytes 1073741824 --no-kernel-timing
  --max-layers 2 --host-samples 2 --no-stream-blocker --barrier-reps 16"
# -d '': every line (read alone stops at the first, which dropped most of the settings).
read -r -d '' -a run_args <<<"${MOEBENCH_SANITIZER_RUN_ARGS:-$default_run_args}" || true
read -r -a tools <<<"${MOEBENCH_SANITIZER_TOOLS:-memcheck racecheck synccheck initcheck}"
if [[ -n "${MOEBENCH_SANITIZER_PROBES:-}" ]]; then
  read -r -a probes <<<"$MOEBENCH_SANITIZER_PROBES"
else
  # The default suite: rows of `moebench list` whose second column says yes.
  read -r -a probes <<<"$("$moebench" list probes 2>/dev/null | awk '$2 == "yes" {print $1}' | tr '\n' ' ')"
  ((${#probes[@]})) || probes=(suite)
fi
limit=${MOEBENCH_SANITIZER_TIMEOUT:-1800}
jobs=${MOEBENCH_SANITIZER_JOBS:-1}
deadline=${MOEBENCH_SANITIZER_DEADLINE:-}
[[ -z $deadline || $deadline =~ ^[1-9][0-9]*$ ]] || { echo "compute-sanitizer.sh: MOEBENCH_SANITIZER_DEADLINE='$deadline' must be a whole number of seconds >= 1" >&2; exit 2; }
t_start=$(date +%s)
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "compute-sanitizer.sh: MOEBENCH_SANITIZER_JOBS='$jobs' must be a whole number >= 1" >&2; exit 2; }
# Variants (checked before anything is written); -d '': every line (a long list may be written
# over several).
read -r -d '' -a variants <<<"${MOEBENCH_SANITIZER_VARIANTS:-}" || true
for v in "${variants[@]}"; do
  [[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*=[^+]*(\+[A-Za-z_][A-Za-z0-9_]*=[^+]*)*$ ]] ||
    { echo "compute-sanitizer.sh: MOEBENCH_SANITIZER_VARIANTS: '$v' is not VAR=VALUE[+VAR=VALUE...]" >&2; exit 2; }
done
read -r -a sanitizer_args <<<"${MOEBENCH_SANITIZER_ARGS:-}"
for a in "${sanitizer_args[@]}"; do
  [[ $a == --tool || $a == --tool=* ]] &&
    { echo "compute-sanitizer.sh: MOEBENCH_SANITIZER_ARGS: '--tool' is set by MOEBENCH_SANITIZER_TOOLS" >&2; exit 2; }
done
# The tool's own parse of them, on a target that needs no GPU: options differ between releases
# (2025.3 has --kernel-name where older ones had --filter), and a refused one would otherwise
# fail every run of a lent machine's call at once.
if ((${#sanitizer_args[@]})); then
  for tool in "${tools[@]}"; do
    if ! refusal=$(timeout 60 "$sanitizer" --tool "$tool" --require-cuda-init no "${sanitizer_args[@]}" \
                     "$(type -P true)" 2>&1); then
      echo "compute-sanitizer.sh: MOEBENCH_SANITIZER_ARGS='${sanitizer_args[*]}': $tool refused them:" \
           "$(head -1 <<<"$refusal") ('$sanitizer --help' lists its options)" >&2
      exit 2
    fi
  done
fi
out=${MOEBENCH_SANITIZER_OUT:-compute-sanitizer-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.md

{
  echo "# compute-sanitizer: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "- binaries: \`$bin\`; moebench: \`$("$moebench" --version 2>/dev/null | head -1)\`"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- $("$sanitizer" --version 2>/dev/null | grep -i version | head -1)"
  echo "- moebench run ${run_args[*]}"
  echo "- test binaries: ${test_names[*]}; doctest arguments: ${test_args[*]:-(none)}; MOE_TEST_M=${MOE_TEST_M:-(all)}; MOE_TEST_REPEAT=${MOE_TEST_REPEAT:-(1)}"
  echo "- variants: ${MOEBENCH_SANITIZER_VARIANTS:-(none)}"
  echo "- compute-sanitizer options: ${sanitizer_args[*]:-(none: every kernel launch checked)}"
  echo
  echo "| tool | binary | result | errors | racecheck hazards | exit | seconds | log |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$summary"

rows=$out/rows
mkdir -p "$rows"
# One (tool, binary) run: the sanitizer's exit code 99 means it found errors. Child processes
# (moebench runs probes in children) are followed, and their error summaries are added up.
# variant: VAR=VALUE assignments joined by '+' (or empty), set for this run only.
run_one() {
  local seq=$1 tool=$2 label=$3 variant=$4; shift 4
  local -a assignments=()
  [[ -n $variant ]] && IFS=+ read -r -a assignments <<<"$variant"
  local log=$out/$tool-$label.log start rc errors result
  start=$(date +%s)
  local run_limit=$limit
  if [[ -n $deadline ]] && ((t_start + deadline - start < run_limit)); then
    run_limit=$((t_start + deadline - start))
  fi
  # TERM, not INT: a background job of a script ignores SIGINT, and so would its children.
  env "${assignments[@]}" timeout --signal=TERM --kill-after=20 "$run_limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
    --target-processes all --print-limit 200 "${sanitizer_args[@]}" "$@" >"$log" 2>&1
  rc=$?
  # One "ERROR SUMMARY: N errors" per process (not the "N errors were not printed" line).
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ errors?$' "$log" | awk '{n += $3} END {print n + 0}')
  # racecheck's own tally, one line a process: "RACECHECK SUMMARY: N hazards displayed (E
  # errors, W warnings)". Its warnings are not in the error count above, yet each is a shared
  # memory access pair with no ordering between them, so any hazard makes the run unclean.
  local hazards=""
  if [[ $tool == racecheck ]]; then
    local displayed reported
    displayed=$(grep -oE 'RACECHECK SUMMARY: [0-9]+ hazards?' "$log" | awk '{n += $3} END {print n + 0}')
    reported=$(grep -c 'Race reported' "$log")  # one line a hazard, in case no summary was written
    hazards=$((displayed > reported ? displayed : reported))
  fi
  if ((rc == 124 || rc == 137)); then result=TIMEOUT
  elif ((rc == 9)) && grep -q "didn't terminate successfully" "$log"; then
    result="KILLED (signal 9: the host out of memory?)"  # what racecheck runs did, too many at once
  elif ((errors > 0 || rc == 99)); then result=ERRORS
  elif ((${hazards:-0} > 0)); then result=HAZARDS
  elif ((rc == 77)); then result=SKIPPED
  elif ((rc == 0)); then result=CLEAN
  elif [[ $label == moebench-* && $rc == 1 ]]; then result="CLEAN (FAIL verdicts)"
  elif [[ $label == moebench-* && $rc == 4 ]]; then result="PROBE ERRORS"  # not checked
  elif ((rc == 3)); then result="NO GPU"  # moebench's environment exit: nothing was checked
  else result=FAILED
  fi
  echo "| $tool | $label | $result | $errors | $hazards | $rc | $(($(date +%s) - start)) | ${log#$out/} |" >"$rows/$seq.row"
  echo "compute-sanitizer: $tool $label: $result ($errors errors${hazards:+, $hazards hazards}, exit $rc)" >&2
}

# Starts one run (tool, label, variant, command...) in the background once fewer than $jobs are
# running; rows are numbered in the order they were asked for, so the summary reads the same
# whatever finished first.
seq=0
start_run() {
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
  seq=$((seq + 1))
  if [[ -n $deadline ]] && (($(date +%s) - t_start >= deadline - 5)); then
    echo "| $1 | $2 | NOT RUN (deadline) | | | | | |" >"$rows/$(printf %03d $seq).row"
    return
  fi
  run_one "$(printf %03d $seq)" "$@" &
}
# Binary by binary, every tool on each: a deadline then cuts the last binaries, not a whole tool.
# With MOEBENCH_SANITIZER_SPLIT=1 (the default) each test case is its own run: the slowest case
# under racecheck no longer holds the others back, and a timeout names the case.
split=${MOEBENCH_SANITIZER_SPLIT:-1}
((${#variants[@]})) || variants=("")
legend=()  # which test case each numbered row ran
for j in "${!variants[@]}"; do
  [[ -n ${variants[$j]} ]] && legend+=("- v$((j + 1)): ${variants[$j]//+/ }")
done
# A row's label: the binary, its case's number, and the variant's (with variants given).
variant_label() { [[ -n ${MOEBENCH_SANITIZER_VARIANTS:-} ]] && echo "-v$(($1 + 1))"; }
for name in "${test_names[@]}"; do
  if path=$(find_binary "$name"); then
    cases=()
    if [[ $split == 1 ]]; then
      # The names between the two rules of doctest's listing (it needs no GPU for that).
      mapfile -t cases < <("$path" --list-test-cases "${test_args[@]}" 2>/dev/null |
        awk '/^====/ {rule++; next} rule == 1 && !/^\[doctest\]/')
    fi
    if ((${#cases[@]} == 0)); then
      for tool in "${tools[@]}"; do
        for j in "${!variants[@]}"; do
          start_run "$tool" "$name$(variant_label "$j")" "${variants[$j]}" "$path" "${test_args[@]}"
        done
      done
      continue
    fi
    for tool in "${tools[@]}"; do
      for i in "${!cases[@]}"; do
        for j in "${!variants[@]}"; do
          # A comma separates doctest filters: '?' matches it (and any other one character).
          start_run "$tool" "$name-$((i + 1))$(variant_label "$j")" "${variants[$j]}" "$path" "${test_args[@]}" \
            "--test-case=${cases[$i]//,/?}"
        done
      done
    done
    for i in "${!cases[@]}"; do legend+=("- $name-$((i + 1)): ${cases[$i]}"); done
  else
    seq=$((seq + 1))
    echo "| all | $name | MISSING | | | | | |" >"$rows/$(printf %03d $seq).row"
    echo "compute-sanitizer: $name not found in $bin" >&2
  fi
done
# One run a probe: a slow probe under a slow tool then costs its own row, not the others'.
for probe in "${probes[@]}"; do
  [[ $probe == none ]] && continue
  for tool in "${tools[@]}"; do
    if [[ $probe == suite ]]; then
      start_run "$tool" moebench-run "" "$moebench" run "${run_args[@]}" -o "$out/$tool-report.json"
    else
      start_run "$tool" "moebench-$probe" "" "$moebench" run "$probe" "${run_args[@]}" -o "$out/$tool-$probe.json"
    fi
  done
done
wait
cat "$rows"/*.row >>"$summary" 2>/dev/null
rm -rf "$rows"
if ((${#legend[@]})); then
  { echo; echo "Test cases and variants of the numbered rows:"; echo; printf '%s\n' "${legend[@]}"; } >>"$summary"
fi
# Clean means every row says CLEAN (FAIL verdicts included) or SKIPPED.
status=0
awk -F' [|] ' 'NR > 0 && $3 != "" && $3 !~ /^(CLEAN|SKIPPED|result|---)/ {bad = 1} END {exit bad}' \
  <(grep '^| ' "$summary") || status=1

echo >>"$summary"
echo "Logs and the reports of the moebench runs are beside this file." >>"$summary"
echo "compute-sanitizer: summary in $summary" >&2
cat "$summary"
exit $status
