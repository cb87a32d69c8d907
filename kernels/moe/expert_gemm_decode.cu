// Stages 2 and 3 for small M (the decode path): kernels that stream each active expert's
// weights once per chunk of its tokens, with every warp its own software pipeline. The warp
// kinds: SIMT for both formats (decode_warp.cuh) and int4 on tensor cores (int4_mma_warp.cuh,
// from M=2, int4_decode_on_tensor_cores()); what they share is in decode_walk.cuh.
//
// Work: a unit is kRows weight rows of one expert that share their inputs (gate_up: gate row c
// and up row I + c, one h column; down: output rows 4j .. 4j + 3). Units are dealt to the
// warps of a resident grid round-robin (unit u to warp u mod warps), so every warp streams
// about the same bytes whatever the number of active experts, and a warp needs no barrier
// with any other: the time of an item is not a serial chain per block (an earlier version,
// a block per (expert, row slice), measured that chain at 35% of the read ceiling).
//
// Pipeline: a piece is a unit's rows over one K segment for one chunk of tokens. Each
// warp keeps kDepth pieces of weights in flight in registers (a ring with compile-time slots):
// it consumes the oldest and at once issues the load of the piece kDepth ahead, so the loads
// of the next pieces (possibly of another expert) are in flight while it computes.
//
// Order: the shared experts come first. They are active for every token whatever the router
// says, so gate_up streams them before it waits for the route kernel (under programmatic
// dependent launch that overlaps routing; a block that can only start when the route's ranking
// block leaves its SM leaves them to the others, shared_expert_warps); the routed experts
// follow once the route kernel's active list is visible. down waits first (it reads h) but
// asks L2 for its shared rows before, then runs one pipeline over every expert. A block
// copies the active experts' weight pointers and pair ranges into shared memory once, so the
// issue of a piece costs no dependent global load.
// Activations (x rows, h rows) are read through L1: a token's row is shared by every warp.
//
// Code that runs right after a dependency wait is fetched cold, under a memory system loaded by
// the other warps' streams, so it is kept to one copy: at one token the table needs the active
// list alone, and gate_up's shared and routed phases run through one call site of
// stream_units. Current figures per stage: docs/design/kernels.md (deepseek-v2-lite bf16 M=1,
// H200: 46.2 us a layer in the engine, 1.47x its floor).
#include <algorithm>
#include <string>
#include <type_traits>

#include "common/cuda_check.hpp"
#include "kernels/moe/decode_grid.cuh"
#include "kernels/moe/decode_walk.cuh"
#include "kernels/moe/decode_warp.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_mma_warp.cuh"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

using namespace decode;

// The warp kind of a decode kernel: SIMT in its piece shape, or int4 on tensor cores.
template <WeightFormat F, bool kGateUp, int kTokens, bool kMma>
using WarpKind = std::conditional_t<kMma, Int4MmaWarp<kGateUp>,
                                    DecodeWarp<F, kGateUp, PieceShape<F, kGateUp, kTokens>::kRows,
                                               PieceShape<F, kGateUp, kTokens>::kVecs,
                                               PieceShape<F, kGateUp, kTokens>::kDepth, kTokens>>;

template <WeightFormat F, bool kGateUp, int kTokens, bool kMma = false>
__global__ void __launch_bounds__(kThreads, 2) decode_expert_gemm_kernel(DecodeParams p) {
  // One token: the SIMT kernels at M=1 (kTokens is 1 only then).
  run_streamed_grid<WarpKind<F, kGateUp, kTokens, kMma>, F, kGateUp, kTokens == 1 && !kMma>(p);
}

template <WeightFormat F, bool kGateUp, int kTokens, bool kMma = false>
void launch_decode_kernel(const DecodeParams& p, long long max_active, const LaunchChoice& c, cudaStream_t stream) {
  launch_streamed_grid<decode_expert_gemm_kernel<F, kGateUp, kTokens, kMma>, WarpKind<F, kGateUp, kTokens, kMma>>(
      p, max_active, c, stream, kMma ? "decode_expert_gemm_kernel<int4 mma>" : "decode_expert_gemm_kernel");
}

template <WeightFormat F, bool kGateUp>
void launch_decode_format(const DecodeParams& p, long long max_active, const LaunchChoice& c,
                          cudaStream_t stream) {
  // An expert holds at most one pair per token: M bounds the tokens of a pass.
  if (p.m <= 1) return launch_decode_kernel<F, kGateUp, 1>(p, max_active, c, stream);
  if (p.m <= 2) return launch_decode_kernel<F, kGateUp, 2>(p, max_active, c, stream);
  if (p.m <= 4) return launch_decode_kernel<F, kGateUp, 4>(p, max_active, c, stream);
  launch_decode_kernel<F, kGateUp, 8>(p, max_active, c, stream);
}

template <bool kGateUp>
void launch_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  const DecodeParams p = streamed_params<kGateUp>(a, l);
  const long long max_active = max_active_experts(a);
  const LaunchChoice c = launch_choice(a);
  if (a.dims.format == WeightFormat::bf16)
    launch_decode_format<WeightFormat::bf16, kGateUp>(p, max_active, c, stream);
  else if (int4_decode_on_tensor_cores(a.m, a.options.int4_decode) &&
           p.out_rows % Int4MmaWarp<kGateUp>::kCols == 0)
    launch_decode_kernel<WeightFormat::int4, kGateUp, Int4MmaWarp<kGateUp>::kChunk, true>(p, max_active, c,
                                                                                         stream);
  else
    launch_decode_format<WeightFormat::int4, kGateUp>(p, max_active, c, stream);
}

template <WeightFormat F, bool kGateUp>
void preload_decode_format() {
  preload_streamed_kernel<decode_expert_gemm_kernel<F, kGateUp, 1>>("decode_expert_gemm_kernel<1 token>");
  preload_streamed_kernel<decode_expert_gemm_kernel<F, kGateUp, 2>>("decode_expert_gemm_kernel<2 tokens>");
  preload_streamed_kernel<decode_expert_gemm_kernel<F, kGateUp, 4>>("decode_expert_gemm_kernel<4 tokens>");
  preload_streamed_kernel<decode_expert_gemm_kernel<F, kGateUp, 8>>("decode_expert_gemm_kernel<8 tokens>");
}

template <bool kGateUp>
void preload_decode_stage(WeightFormat format) {
  if (format == WeightFormat::bf16) return preload_decode_format<WeightFormat::bf16, kGateUp>();
  preload_decode_format<WeightFormat::int4, kGateUp>();
  if (current_device_sm() >= 80)  // int4_decode_on_tensor_cores
    preload_streamed_kernel<decode_expert_gemm_kernel<WeightFormat::int4, kGateUp, Int4MmaWarp<kGateUp>::kChunk, true>>(
        "decode_expert_gemm_kernel<int4 mma>");
}

}  // namespace

void preload_decode_kernels(WeightFormat format) {
  preload_decode_stage<true>(format);
  preload_decode_stage<false>(format);
}

void enqueue_gate_up_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<true>(a, l, stream);
}

void enqueue_down_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<false>(a, l, stream);
}

}  // namespace moe::kernels
