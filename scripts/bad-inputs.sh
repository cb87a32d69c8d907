#!/usr/bin/env bash
# Runs moebench with every bad input on the list below and prints a Markdown table (input, what
# moebench printed, exit code): the source of docs/bad-inputs.md. Every bad input must exit 2
# with one line naming the value and what is allowed, before any device is touched, so the
# table is the same on a machine without a GPU. Rows that break that rule are marked FINDING
# (exit code or line count; whether the line names the value is for the reader to judge).
#
#   scripts/bad-inputs.sh [MOEBENCH] > docs/bad-inputs.md    # default: build/apps/moebench
#
# docs/bad-inputs.md also has a hand-written triage section (owner and fix of each finding);
# regenerating drops it, so redo it from the new Findings list.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
moebench=${1:-$root/build/apps/moebench}
[[ -x "$moebench" ]] || { echo "bad-inputs.sh: no moebench at $moebench" >&2; exit 2; }
moebench=$(realpath "$moebench")
export MOEBENCH_FIXTURES=$root/fixtures
# Keep ASan builds quiet about the CUDA driver's shadow-gap mappings; leaks still count.
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0}

D=$(mktemp -d /tmp/moebench-bad-inputs.XXXXXX)
trap 'rm -rf "$D"' EXIT
cd "$D"

# ---- files ------------------------------------------------------------------------------------
: >empty.json
echo 'hello' >not-json.json
shape() { echo "{\"name\": \"t\", \"hidden\": 256, \"moe_inter\": 128, \"experts\": 8, \"top_k\": 2$1}"; }
shape ', "shared_experts": 1' | head -c 40 >shape-truncated.json
echo '{"name": "t", "hidden": "256", "moe_inter": 128, "experts": 8, "top_k": 2}' >shape-string-size.json
echo '{"name": "t", "hidden": 256.5, "moe_inter": 128, "experts": 8, "top_k": 2}' >shape-float-size.json
echo '{"name": "t", "hidden": -256, "moe_inter": 128, "experts": 8, "top_k": 2}' >shape-negative.json
echo '{"name": "t", "hidden": 256, "moe_inter": 128, "experts": 0, "top_k": 2}' >shape-zero-experts.json
echo '{"name": "t", "hidden": 1000000000, "moe_inter": 128, "experts": 8, "top_k": 2}' >shape-huge.json
echo '{"name": "t", "hidden": 100, "moe_inter": 128, "experts": 8, "top_k": 2}' >shape-not-multiple.json
echo '{"name": "t", "hidden": 256, "moe_inter": 128, "experts": 2, "top_k": 4}' >shape-topk-above-experts.json
shape ', "layers": 4' >shape-unknown-field.json
# A case file naming an engine adapter (run.engine): one found nowhere, an empty one, and a path
# beside the case file that is not a library.
adapter_case() { sed "s|\"libmoebench_stale_resident_cache_adapter.so\"|\"$1\"|" "$root/fixtures/cases/stale-resident-pointers-adapter.json"; }
adapter_case libnosuch_adapter.so >case-adapter-missing.json
adapter_case "" >case-adapter-empty.json
adapter_case ./not-json.json >case-adapter-not-library.json
shape ', "scoring": "relu"' >shape-bad-scoring.json
shape ', "renormalize": "yes"' >shape-bad-renormalize.json
echo '{"name": "t", "hidden": 1e400, "moe_inter": 128, "experts": 8, "top_k": 2}' >shape-number-overflow.json
echo '[256, 128, 8, 2]' >shape-array.json
echo '{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008}' >config-dense.json
echo '{"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_local_experts": 8}' >config-no-topk.json
echo '{"model_type": "mixtral", "hidden_size": "4096", "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2}' >config-string-hidden.json
echo '{"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_local_experts": 4294967304, "num_experts_per_tok": 2}' >config-experts-wrap.json
echo '{"model_type": "qwen2_moe", "hidden_size": 2048, "moe_intermediate_size": 0, "num_experts": 60, "num_experts_per_tok": 4, "shared_expert_intermediate_size": 5632}' >config-zero-inter.json
echo '{"model_type": "dbrx", "d_model": 6144, "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4}}' >config-unknown-family.json
echo '{"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2}' >config-mixtral.json
mkdir -p cfgdir && cp config-dense.json cfgdir/config.json

report_src=$root/tests/data/reports/h200-copy.json
edit_report() {  # python expression on r -> file
  python3 -c "import json,sys; r=json.load(open('$report_src')); $1; json.dump(r, open('$2','w'))"
}
head -c 500 "$report_src" >report-truncated.json
edit_report 'r["schema_version"]=2' report-newer.json
edit_report 'r["schema_version"]=4294967297' report-version-wraps.json
edit_report 'del r["schema_version"]' report-no-version.json
edit_report 'r["schema"]="something.else"' report-other-schema.json
edit_report 'r["cases"]={}' report-cases-object.json
edit_report 'r["cases"][0]["verdict"]="MAYBE"' report-bad-verdict.json
edit_report 'r["cases"][0]["m"]="1"' report-m-string.json
edit_report 'r["cases"][0]["measurements"]["main"]["raw"]["gpu_time_us"]=["x"]' report-sample-string.json
edit_report 'del r["cases"][0]["probe"]' report-no-probe.json
edit_report 'r["tool"]["git_dirty"]=1' report-git-dirty-number.json
edit_report 'r["environment"]["gpu"]=[]' report-gpu-array.json
echo '{"schema": "moebench.report", "schema_version": 1e400}' >report-number-overflow.json

case_src=$root/tests/data/cases/with-shape-object.json
edit_case() {
  python3 -c "import json; c=json.load(open('$case_src')); $1; json.dump(c, open('$2','w'))"
}
head -c 120 "$case_src" >case-truncated.json
edit_case 'c["schema_version"]=2' case-newer.json
edit_case 'c["probe"]="nosuch"' case-unknown-probe.json
edit_case 'c["run"]["mutation"]="nosuch"' case-unknown-mutation.json
edit_case 'c["run"]["m"]=[0]' case-m-zero.json
edit_case 'c["run"]["m"]=["1"]' case-m-string.json
edit_case 'c["run"]["shapes"]=["nosuch"]' case-unknown-shape.json
edit_case 'c["run"]["shapes"]=[{"name": "x", "hidden": 256}]' case-bad-shape-object.json
edit_case 'c["run"]["weight_formats"]=["fp8"]' case-bad-format.json
edit_case 'c["run"]["max_noise_pct"]=-1' case-negative-noise.json
edit_case 'c["expected_verdict"]="MAYBE"' case-bad-verdict.json
edit_case 'c["run"]["frob"]=1' case-unknown-field.json

# ---- inputs: description <TAB> arguments (evaluated by the shell in $D) ------------------------
cases=$(cat <<'LIST'
no command	
unknown command	frobnicate
unknown option	run --frob
unknown probe	run nosuch
unknown shape name	run --shape nosuch
empty shape	run --shape ''
--m 0	run --m 0
--m -1	run --m -1
--m 1e9	run --m 1e9
--m 1000000000	run --m 1000000000
--m 65537	run --m 65537
--m abc	run --m abc
--m 1,,2	run --m 1,,2
--m 2.5	run --m 2.5
--m empty	run --m ''
--min-samples 0	run --min-samples 0
--min-samples -1	run --min-samples -1
--min-samples abc	run --min-samples abc
--min-samples 1e12	run --min-samples 1000000000000
--max-samples 0	run --max-samples 0
--max-samples -5	run --max-samples -5
--min-samples above --max-samples	run --min-samples 100 --max-samples 10
--max-noise 0	run --max-noise 0
--max-noise -1	run --max-noise -1
--max-noise 1000	run --max-noise 1000
--max-noise abc	run --max-noise abc
--max-noise nan	run --max-noise nan
--max-noise inf	run --max-noise inf
--min-time -1	run --min-time -1
--min-time nan	run --min-time nan
--min-time 1e9	run --min-time 1e9
--timeout 0	run --timeout 0
--timeout -1	run --timeout -1
--timeout nan	run --timeout nan
--timeout inf	run --timeout inf
--timeout 1e9	run --timeout 1e9
--warmup -1	run --warmup -1
--warmup 1000000000	run --warmup 1000000000
--warmup abc	run --warmup abc
--host-samples 0	run --host-samples 0
--host-samples -1	run --host-samples -1
--host-samples 1e9	run --host-samples 1000000000
--device -1	run --device -1
--device 99	run --device 99
--device abc	run --device abc
--seed -1	run --seed -1
--seed abc	run --seed abc
--repeat 0	run --repeat 0
--repeat -1	run --repeat -1
--repeat 1000000000	run --repeat 1000000000
--filter no match	run bandwidth --filter no-such-case
--filter bad regex	run --filter [
--exchange unknown	run ep-step --exchange nosuch
--exchange without ep-step	run bandwidth --exchange lsa
--engines 0	run two-engine --engines 0
--engines 1	run two-engine --engines 1
--engines -1	run two-engine --engines -1
--engines 1000000	run two-engine --engines 1000000
--barrier-reps 15	run barrier --barrier-reps 15
--barrier-reps 0	run barrier --barrier-reps 0
--barrier-reps abc	run barrier --barrier-reps abc
--copy-bytes 0	run copy --copy-bytes 0
--copy-bytes -1	run copy --copy-bytes -1
--copy-bytes 1	run copy --copy-bytes 1
--copy-bytes 1e30	run copy --copy-bytes 1000000000000000000000000000000
--max-layers -1	run --max-layers -1
--max-layers 33	run --max-layers 33
--max-layers abc	run --max-layers abc
--no-stream-blocker=maybe	run --no-stream-blocker=maybe
--telemetry sometimes	run route-telemetry --telemetry sometimes
--telemetry without the probe	run copy --telemetry checks
--histogram without a histogram	run copy --histogram
--hot-share 0	run expert-residency --hot-share 0
--hot-share 1.5	run expert-residency --hot-share 1.5
--hot-share abc	run expert-residency --hot-share abc
--hot-share without the probe	run copy --hot-share 0.5
--device-budget below one expert	run expert-residency --device-budget 1000
--device-budget -1	run expert-residency --device-budget -1
--peer nvblas	run bandwidth --peer nvblas
--peer without the probe	run copy --peer cublas
--weight-format fp8	run --weight-format fp8
--mode lazy	run --mode lazy
--l2 warm	run --l2 warm
--format xml	run --format xml
--mutation nosuch	run --mutation nosuch
--fixtures missing folder	run --fixtures /nonexistent
-o into a missing folder	run -o /nonexistent/dir/report.json
--shape missing file	run --shape /nonexistent/shape.json
--shape folder	run --shape "$D/"
--shape empty file	run --shape empty.json
--shape not JSON	run --shape not-json.json
--shape truncated	run --shape shape-truncated.json
--shape size as string	run --shape shape-string-size.json
--shape size as float	run --shape shape-float-size.json
--shape negative size	run --shape shape-negative.json
--shape zero experts	run --shape shape-zero-experts.json
--shape huge hidden	run --shape shape-huge.json
--shape hidden not a multiple of 32	run --shape shape-not-multiple.json
--shape top_k above experts	run --shape shape-topk-above-experts.json
--shape unknown field	run --shape shape-unknown-field.json
--shape unknown scoring	run --shape shape-bad-scoring.json
--shape renormalize as string	run --shape shape-bad-renormalize.json
--shape number 1e400	run --shape shape-number-overflow.json
--shape a JSON array	run --shape shape-array.json
config.json of a dense model	run --shape cfgdir/config.json
config.json without top-k	run --shape config-no-topk.json
config.json hidden as string	run --shape config-string-hidden.json
config.json experts 2^32+8	run --shape config-experts-wrap.json
config.json zero expert width	run --shape config-zero-inter.json
config.json model_type not in the routing table	run --shape config-unknown-family.json
--assume-routing not a known family	run --shape config-unknown-family.json --assume-routing nosuch
--assume-routing on a known family	run --shape config-mixtral.json --assume-routing qwen2_moe
list nosuch	list nosuch
list --fixtures missing	list --fixtures /nonexistent
env --device -1	env --device -1
env --format xml	env --format xml
selftest --reps 0	selftest --reps 0
selftest --reps -1	selftest --reps -1
selftest --device -1	selftest --device -1
compare missing base	compare /nonexistent.json "$root/tests/data/reports/h200-copy.json"
compare empty file	compare empty.json "$root/tests/data/reports/h200-copy.json"
compare not JSON	compare not-json.json "$root/tests/data/reports/h200-copy.json"
compare truncated report	compare report-truncated.json "$root/tests/data/reports/h200-copy.json"
compare newer schema	compare report-newer.json "$root/tests/data/reports/h200-copy.json"
compare schema_version 2^32+1	compare report-version-wraps.json "$root/tests/data/reports/h200-copy.json"
compare no schema_version	compare report-no-version.json "$root/tests/data/reports/h200-copy.json"
compare another schema	compare report-other-schema.json "$root/tests/data/reports/h200-copy.json"
compare cases as object	compare report-cases-object.json "$root/tests/data/reports/h200-copy.json"
compare unknown verdict	compare report-bad-verdict.json "$root/tests/data/reports/h200-copy.json"
compare m as string	compare report-m-string.json "$root/tests/data/reports/h200-copy.json"
compare sample as string	compare report-sample-string.json "$root/tests/data/reports/h200-copy.json"
compare case without probe	compare report-no-probe.json "$root/tests/data/reports/h200-copy.json"
compare git_dirty a number	compare report-git-dirty-number.json "$root/tests/data/reports/h200-copy.json"
compare gpu an array	compare report-gpu-array.json "$root/tests/data/reports/h200-copy.json"
compare number 1e400	compare report-number-overflow.json "$root/tests/data/reports/h200-copy.json"
compare a case file	compare "$root/tests/data/cases/with-shape-object.json" "$root/tests/data/reports/h200-copy.json"
compare a shape file	compare "$root/fixtures/shapes/tiny.json" "$root/tests/data/reports/h200-copy.json"
compare --threshold -1	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --threshold -1
compare --threshold abc	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --threshold abc
compare --threshold nan	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --threshold nan
compare --confidence 1.5	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --confidence 1.5
compare --confidence 0	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --confidence 0
compare --min-samples 0	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --min-samples 0
compare --min-samples -1	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --min-samples -1
compare --metric foo	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --metric foo
compare --format foo	compare "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --format foo
compare a folder	compare "$D/" "$root/tests/data/reports/h200-copy.json"
noise one report	noise "$root/tests/data/reports/h200-copy.json"
noise missing report	noise "$root/tests/data/reports/h200-copy.json" /nonexistent.json
noise newer schema	noise "$root/tests/data/reports/h200-copy.json" report-newer.json
noise --threshold 0	noise "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --threshold 0
noise --threshold nan	noise "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --threshold nan
noise --metric foo	noise "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --metric foo
noise --format foo	noise "$root/tests/data/reports/h200-copy.json" "$root/tests/data/reports/h200-copy.json" --format foo
render missing file	render /nonexistent.json
render a folder	render "$D/"
render empty file	render empty.json
render truncated report	render report-truncated.json
render newer schema	render report-newer.json
render unknown verdict	render report-bad-verdict.json
render sample as string	render report-sample-string.json
render git_dirty a number	render report-git-dirty-number.json
render number 1e400	render report-number-overflow.json
render --format foo	render "$root/tests/data/reports/h200-copy.json" --format foo
repro missing file	repro /nonexistent.json
repro a folder	repro "$D/"
repro empty file	repro empty.json
repro not JSON	repro not-json.json
repro truncated case	repro case-truncated.json
repro case newer schema	repro case-newer.json
repro case unknown probe	repro case-unknown-probe.json
repro case unknown mutation	repro case-unknown-mutation.json
repro case m 0	repro case-m-zero.json
repro case m as string	repro case-m-string.json
repro case unknown shape	repro case-unknown-shape.json
repro case incomplete shape object	repro case-bad-shape-object.json
repro case unknown weight format	repro case-bad-format.json
repro case negative noise limit	repro case-negative-noise.json
repro case unknown expected verdict	repro case-bad-verdict.json
repro case unknown field	repro case-unknown-field.json
repro report newer schema	repro report-newer.json
repro report truncated	repro report-truncated.json
repro report unknown verdict	repro report-bad-verdict.json
repro report number 1e400	repro report-number-overflow.json
repro a shape file	repro "$root/fixtures/shapes/tiny.json"
repro --device -1	repro "$root/tests/data/cases/with-shape-object.json" --device -1
--engine missing file	run two-engine --engine nosuch.so
--engine not a library	run two-engine --engine not-json.json
--engine empty	run --engine ''
--engine an executable	run two-engine --engine "$moebench"
selftest --engine missing file	selftest --engine nosuch.so
repro --engine missing file	repro "$root/tests/data/cases/with-shape-object.json" --engine nosuch.so
repro case adapter not found	repro case-adapter-missing.json
repro case adapter empty	repro case-adapter-empty.json
repro case adapter not a library	repro case-adapter-not-library.json
LIST
)

cell() {  # text -> one Markdown table cell
  local s=${1//|/\\|}
  s=${s//$'\n'/ <br> }
  printf '%s' "${s:0:400}"
}

rows=()
findings=()
n=0
while IFS=$'\t' read -r what args; do
  n=$((n + 1))
  output=$(eval "timeout 60 \"$moebench\" $args" 2>&1 </dev/null)
  rc=$?
  output=${output//$D/DIR}
  output=${output//$root\//}
  lines=$(printf '%s' "$output" | grep -c '')
  shown="moebench $args"
  shown=${shown//\"\$root\/tests\/data\/reports\/h200-copy.json\"/GOOD.json}
  shown=${shown//\"\$root\/tests\/data\/cases\//tests\/data\/cases\/}
  shown=${shown//\"\$root\//}
  shown=${shown//\"\$D\/\"/DIR\/}
  shown=${shown//\"/}
  mark=""
  if ((rc != 2 || lines != 1)); then
    mark="FINDING: "
    findings+=("| $n | \`$(cell "$shown")\` | exit $rc, $lines lines |")
  fi
  rows+=("| $n | $what | \`$(cell "$shown")\` | ${mark}$(cell "$output") | $rc |")
done <<<"$cases"

cat <<EOF
# Bad inputs: what moebench prints and its exit code

Generated by \`scripts/bad-inputs.sh $(basename "$moebench")\` on $(date -u +%Y-%m-%d) at commit
$(git -C "$root" rev-parse --short HEAD 2>/dev/null)$(git -C "$root" diff --quiet 2>/dev/null || echo " (dirty)"),
$(nvidia-smi -L >/dev/null 2>&1 && echo "with a GPU" || echo "on a machine without a GPU")
(binary: \`${moebench#$root/}\`). The rule: every bad input exits **2** with
**one line** naming the value and what is allowed, and nothing runs. GOOD.json is
tests/data/reports/h200-copy.json; DIR/ a temporary folder; other file names are the bad files
the script writes (see its source for their content).

## Findings (exit code other than 2, or more than one line)

EOF
if ((${#findings[@]})); then
  echo "| # | command | got |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${findings[@]}"
else
  echo "None: all ${n} inputs exited 2 with one line."
fi
cat <<EOF

## All inputs

| # | input | command | printed | exit |
| --- | --- | --- | --- | --- |
EOF
printf '%s\n' "${rows[@]}"
