#!/usr/bin/env bash
# The streaming expert GEMM's consumer loop in SASS: instructions a KB of weights, read from the
# binary without a GPU (cuobjdump, from the CUDA toolkit), so an inner-loop change can be priced
# before device time is spent on it.
#
#   scripts/sass-per-kb.sh [BINARY | SASS_TEXT]     (default: build/apps/moebench)
#
# For every stream_expert_gemm_kernel instantiation: the smallest loop (a backward branch's
# span) that holds both a wait on an mbarrier (SYNCS...TRYWAIT) and the HMMAs, i.e. one ring
# item of a consumer warp; its instruction count (NOPs left out) over the KB a consumer warp
# reads an item (bf16: 16 rows x 64 k, 2 KB; int4: one 128-k group of 16 rows, 1 KB). The count
# is static: it covers every branch of the body (each chunk, the epilogue's call), so it is an
# upper bound of what one item issues. Exit 2 when no such kernel or loop is found.
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
    best = None
    for i, (addr, text) in enumerate(ins):
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= addr: continue
        body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr and not t.startswith("NOP")]
        if any("HMMA" in t for t in body) and any("SYNCS" in t and "TRYWAIT" in t for t in body):
            if best is None or len(body) < len(best): best = body
    label = gate + " " + fmt + " " + (chunks.group(1) if chunks else "?") + " chunk(s)"
    if best is None:
        print(f"{label}: no consumer loop found"); status = 2; continue
    kb = 1.0 if fmt == "int4" else 2.0
    hmma = sum("HMMA" in t for t in best)
    print(f"{label}: {len(best)} instructions an item ({hmma} HMMA), {len(best) / kb:.0f} a KB of weights")
sys.exit(status)
' <<<"$sass"
