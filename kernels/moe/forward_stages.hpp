#pragma once
// Host launchers of the forward's stages, individually callable (tests run them one by one).
// All read and write the scratch buffer at the offsets of ScratchLayout.
#include "kernels/moe/forward.hpp"

namespace moe::kernels {

// Router logits + top-k + weights + grouping (one kernel; the last block to finish groups;
// zeroes the completion counters with a memset node first). On the decode path on sm_90+
// (unless ForwardOptions::cluster_route is off): one cluster whose block 0 ranks and groups, no memset.
void enqueue_route(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);

// Whether enqueue_route runs the cluster route for these args (its ranking block then holds
// one SM while gate_up's blocks start).
bool route_runs_as_cluster(const MoeForwardArgs& args);

// gate_up + SwiGLU into scratch h, and down into scratch down_out.
void enqueue_gate_up_decode(const MoeForwardArgs& args, const ScratchLayout& layout,
                            cudaStream_t stream);
void enqueue_down_decode(const MoeForwardArgs& args, const ScratchLayout& layout,
                         cudaStream_t stream);
// The mma family (ForwardOptions::gemm): any M, both formats; int4 weights in the mma fragment
// layout (int4_mma_layout.hpp). Needs sm_80.
void enqueue_gate_up_mma(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);
void enqueue_down_mma(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);
// The streaming family (ForwardOptions::gemm = stream): any M, both formats; int4 weights in the
// mma fragment layout. Needs sm_90 (bulk copies).
void enqueue_gate_up_stream(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);
void enqueue_down_stream(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);
void enqueue_gate_up_tensor_core(const MoeForwardArgs& args, const ScratchLayout& layout,
                                 cudaStream_t stream);
void enqueue_down_tensor_core(const MoeForwardArgs& args, const ScratchLayout& layout,
                              cudaStream_t stream);
// The tensor-core path on warp-group MMAs (ForwardOptions::tiles): sm_90a only;
// wgmma_tiles_run says whether a forward of m tokens of a layer of `dims` takes them, else the
// wmma tiles run.
bool wgmma_tiles_run(const MoeDims& dims, const ForwardOptions& options, WeightLayouts layouts, int m);
void enqueue_gate_up_wgmma(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);
void enqueue_down_wgmma(const MoeForwardArgs& args, const ScratchLayout& layout, cudaStream_t stream);

// gate_up then down on the family the forward takes: stream or mma at every M under
// ForwardOptions::gemm, else the decode kernels or the tensor-core tiles by `path` (resolve_forward_path(args)).
// Stages 2 and 3 of enqueue_moe_forward, and of the expert-parallel layer's grouped rows.
// Returns the kernels it enqueued (down_rows_in_bf16 says how down's rows were stored).
ExpertGemmKernels enqueue_expert_gemms(const MoeForwardArgs& args, const ScratchLayout& layout, ForwardPath path,
                                       cudaStream_t stream);

// Weighted combine of down_out (fp32 rows, or bf16 where bf16_rows) into args.out.
void enqueue_combine(const MoeForwardArgs& args, const ScratchLayout& layout, bool bf16_rows, cudaStream_t stream);

// Each stage's kernels loaded now (preload_forward_kernels, forward.hpp): every instantiation
// the stage may launch for `format` on the current device, with its launcher's per-device
// caches (occupancy, shared-memory attribute) primed.
void preload_route_kernels();
void preload_decode_kernels(WeightFormat format);
void preload_mma_kernels(WeightFormat format, Int4Layout layout);
void preload_stream_kernels(WeightFormat format);
void preload_tensor_core_kernels(WeightFormat format);
void preload_wgmma_kernels(const MoeDims& dims, WeightLayouts layouts);
void preload_combine_kernels();

}  // namespace moe::kernels
