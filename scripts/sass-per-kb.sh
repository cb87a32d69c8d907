#!/usr/bin/env bash
# The streaming expert GEMM's consumer loop in SASS: instructions a KB of weights, read from the
# binary without a GPU (cuobjdump, from the CUDA toolkit), so an inner-loop change can be priced
# before device time is spent on it.
#
#   scripts/sass-per-kb.sh [BINARY | SASS_TEXT]     (default: build/apps/moebench)
#
# For every stream_expert_gemm_kernel instantiation: the loop (a backward branch's span) that
# holds a wait on an mbarrier (SYNCS...TRYWAIT) and the most HMMAs (the smallest such), i.e.
# one ring item of a consumer warp (the unrolled stage, not a partial stage's early exit); its instruction count (NOPs left out) over the KB of weights its
# HMMAs consume (one m16n8k16 a chunk takes 16 rows x 16 k: bf16 512 bytes, int4 128). The
# count is static: it covers every branch of the body (each chunk, the epilogue, a loop's
# set-up), so it is an upper bound of what a KB issues. Exit 2 when no such kernel or loop is
# found.
set -euo pipefail
input=${1:-build/apps/moebench}
[[ -f $input ]] || { echo "sass-per-kb.sh: no file '$input'" >&2; exit 2; }
if [[ $(head -c 4 "$input" | tr -d '\177') != ELF ]]; then sass=$(cat "$input"); else
  command -v cuobjdump >/dev/null || PATH=$PATH:/usr/local/cuda/bin
  command -v cuobjdump >/dev/null || { echo "sass-per-kb.sh: cuobjdump not found (CUDA toolkit)" >&2; exit 2; }
  sass=$(cuobjdump -sass "$input")
fi
python3 -c '
import re, sys
funcs, name = {}, None
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        name = m.group(1) if "stream_expert_gemm_kernel" in m.group(1) else None
        if name: funcs[name] = []
        continue
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
    if name and m: funcs[name].append((int(m.group(1), 16), m.group(2)))
if not funcs: sys.exit("sass-per-kb.sh: no stream_expert_gemm_kernel in the input")
status = 0
for name, ins in funcs.items():
    fmt = "int4" if "WeightFormatE1" in name else "bf16"
    gate = "gate_up" if re.search(r"WeightFormatE\dELb1", name) else "down"
    chunks = re.search(r"ELi(\d)E", name)
    tiles = re.search(r"ELi\dELi(\d)E", name)  # int4 units of one or two tiles (stream_plan.hpp)
    best = None
    for i, (addr, text) in enumerate(ins):
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= addr: continue
        body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr and not t.startswith("NOP")]
        hm = sum("HMMA" in t for t in body)
        if hm and any("SYNCS" in t and "TRYWAIT" in t for t in body):
            if best is None or (hm, -len(body)) > (sum("HMMA" in t for t in best), -len(best)): best = body
    label = gate + " " + fmt + " " + (chunks.group(1) if chunks else "?") + " chunk(s)" + \
        (", " + tiles.group(1) + " tile(s) a unit" if tiles else "")
    if best is None:
        print(f"{label}: no consumer loop found"); status = 2; continue
    hmma = sum("HMMA" in t for t in best)
    kb = hmma / int(chunks.group(1) if chunks else 1) * (0.125 if fmt == "int4" else 0.5)
    print(f"{label}: {len(best)} instructions in the loop ({hmma} HMMA, {kb:g} KB of weights), {len(best) / kb:.0f} a KB")
sys.exit(status)
' <<<"$sass"
