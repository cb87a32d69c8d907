// Stages 2 and 3 on the mma expert GEMM (ForwardOptions::gemm, GemmFamily::mma): one family for
// every M and both formats. Each active expert's weights stream once per pass of up to 32 of
// its tokens, 16 weight rows a warp's unit on mma.m16n8k16 with tokens as the narrow operand
// (expert_mma_warp.cuh); int4 weights are read in the layer's layout (ExpertTable::int4_layout:
// rows, or the mma fragment layout that gemm=mma generates, int4_mma_layout.hpp). The grid,
// the deal of units and the order under programmatic dependent launch are the decode kernels'
// (decode_grid.cuh): shared experts first, before gate_up's wait; down asks L2 for its shared
// rows before its wait. Units are dealt round-robin over every resident warp, so all SMs stream
// whatever the number of active experts.
#include "kernels/moe/decode_grid.cuh"
#include "kernels/moe/expert_mma_warp.cuh"

namespace moe::kernels {

namespace {

using namespace decode;

// L: where int4 codes sit (bf16: rows, ignored).
template <WeightFormat F, bool kGateUp, int kChunks, Int4Layout L>
__global__ void __launch_bounds__(kThreads, 2) mma_expert_gemm_kernel(DecodeParams p) {
  run_streamed_grid<ExpertMmaWarp<F, kGateUp, kChunks, L>, F, kGateUp, false>(p);
}

template <WeightFormat F, bool kGateUp, int kChunks, Int4Layout L>
void launch_mma(const DecodeParams& p, long long max_active, const LaunchChoice& c, cudaStream_t stream) {
  launch_streamed_grid<mma_expert_gemm_kernel<F, kGateUp, kChunks, L>, ExpertMmaWarp<F, kGateUp, kChunks, L>>(
      p, max_active, c, stream, "mma_expert_gemm_kernel");
}

// An expert holds at most one pair per token, so M bounds a pass's chunks: 1, 2 or 4 chunks
// of 8 tokens (passes of 32 beyond).
template <WeightFormat F, bool kGateUp, Int4Layout L>
void launch_mma_format(const DecodeParams& p, long long max_active, const LaunchChoice& c, cudaStream_t stream) {
  if (p.m <= 8) return launch_mma<F, kGateUp, 1, L>(p, max_active, c, stream);
  if (p.m <= 16) return launch_mma<F, kGateUp, 2, L>(p, max_active, c, stream);
  launch_mma<F, kGateUp, 4, L>(p, max_active, c, stream);
}

template <bool kGateUp>
void launch_mma_stage(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  if (current_device_sm() < 80)
    throw Error(ExitCode::probe_error, "the mma expert GEMM (gemm=mma) needs bf16 mma.sync, sm_80 or newer");
  const DecodeParams p = streamed_params<kGateUp>(a, l);
  const long long active = max_active_experts(a);
  const LaunchChoice c = launch_choice(a);
  if (a.dims.format == WeightFormat::bf16)
    launch_mma_format<WeightFormat::bf16, kGateUp, Int4Layout::rows>(p, active, c, stream);
  else if (a.experts.int4_layout == Int4Layout::rows)
    launch_mma_format<WeightFormat::int4, kGateUp, Int4Layout::rows>(p, active, c, stream);
  else
    launch_mma_format<WeightFormat::int4, kGateUp, Int4Layout::mma_fragments>(p, active, c, stream);
}

template <WeightFormat F, Int4Layout L>
void preload_mma_format() {
  preload_streamed_kernel<mma_expert_gemm_kernel<F, true, 1, L>>("mma_expert_gemm_kernel<gate_up, 1 chunk>");
  preload_streamed_kernel<mma_expert_gemm_kernel<F, true, 2, L>>("mma_expert_gemm_kernel<gate_up, 2 chunks>");
  preload_streamed_kernel<mma_expert_gemm_kernel<F, true, 4, L>>("mma_expert_gemm_kernel<gate_up, 4 chunks>");
  preload_streamed_kernel<mma_expert_gemm_kernel<F, false, 1, L>>("mma_expert_gemm_kernel<down, 1 chunk>");
  preload_streamed_kernel<mma_expert_gemm_kernel<F, false, 2, L>>("mma_expert_gemm_kernel<down, 2 chunks>");
  preload_streamed_kernel<mma_expert_gemm_kernel<F, false, 4, L>>("mma_expert_gemm_kernel<down, 4 chunks>");
}

}  // namespace

void preload_mma_kernels(WeightFormat format, Int4Layout layout) {
  if (current_device_sm() < 80) return;  // launch_mma_stage refuses the family there
  if (format == WeightFormat::bf16)
    preload_mma_format<WeightFormat::bf16, Int4Layout::rows>();
  else if (layout == Int4Layout::rows)
    preload_mma_format<WeightFormat::int4, Int4Layout::rows>();
  else
    preload_mma_format<WeightFormat::int4, Int4Layout::mma_fragments>();
}

void enqueue_gate_up_mma(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_mma_stage<true>(a, l, stream);
}

void enqueue_down_mma(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_mma_stage<false>(a, l, stream);
}

}  // namespace moe::kernels
