#pragma once
// The MoE layer forward: enqueue-only (no host sync, readback or allocation), so it can be
// captured in a CUDA graph. The caller provides the scratch buffer; ScratchLayout says where
// each intermediate lives so tests and probes can read routing decisions back.
//
// Stages (each its own kernel and host launcher, see forward_stages.hpp):
//   1. route:   logits = x . router^T (+ bias) in fp32, top-k on the logits (value descending,
//               index ascending; softmax and sigmoid are monotone so the order is that of the
//               scores), softmax/sigmoid weights, optional renormalisation; then the last block
//               to finish groups (token, slot) pairs by expert on the device.
//   2. gate_up: per expert, h = silu(x W_gate^T) * (x W_up^T), stored bf16.
//   3. down:    per expert, y_pair = h W_down^T, stored fp32 per (token, slot) pair.
//   4. combine: out[t] = sum over slots in slot order of w * y_pair (fixed order, no atomics),
//               rounded to bf16. Shared experts are slots k..k+S-1 with weight 1 (or the
//               shared gate's sigmoid).
// Shapes whose routing is not plain top-k (MoeDims::plain_routing: grouped choice, noaux_tc's
// correction bias, routed_scaling, a shared gate, Llama-4's scaled input) take route_kernel<true>
// on either path (never the cluster route), and scale_input shapes take the tensor-core path,
// whose gate_up reads each pair's own input row (ScratchLayout::x_pairs).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/moe/forward_options.hpp"
#include "kernels/moe/moe_types.hpp"
#include "kernels/moe/route_telemetry.hpp"

namespace moe::kernels {

// ForwardPath::automatic takes the decode kernels up to decode_max_tokens (forward_options.hpp),
// the wider kernels above. Why: the decode kernels stream each active expert's weights once per
// pass of up to 8 of its tokens and spend SIMT instructions per token, so they win while few
// tokens share an expert and keep every SM busy with a handful of active experts, where 64-row
// tensor-core tiles sit mostly empty. The crossover was measured on an H200 (graph replay,
// weights rotated past L2).
// Whether the decode path's int4 kernels at m tokens run on tensor cores.
bool int4_decode_on_tensor_cores(int m, Int4Decode int4_decode);

// Rows of the tensor-core tile in tokens (pairs); the tile list in scratch is in these units.
constexpr int kTensorCoreTileRows = 64;

// Byte offsets into the scratch buffer (all 256-byte aligned). Pairs are (token, slot) with
// slot in [0, k + S): routed slots first, then shared experts; pair index = token * slots + slot.
struct ScratchLayout {
  int m = 0;
  int top_k = 0;
  int slots = 0;          // top_k + shared
  int total_experts = 0;  // E + S
  int pairs = 0;          // m * slots
  int max_tiles = 0;      // upper bound of tensor-core tiles
  int bit_words = 0;      // ceil(m / 32)

  std::size_t logits = 0;          // float [m, E] (biased logits)
  std::size_t topk_ids = 0;        // int32 [m, k]
  std::size_t topk_weights = 0;    // float [m, k]
  std::size_t expert_counts = 0;   // int32 [E + S]: pairs per expert
  std::size_t expert_offsets = 0;  // int32 [E + S + 1]: start of each expert's pairs
  std::size_t num_active = 0;      // int32 [1]: experts with at least one pair
  std::size_t active_experts = 0;  // int32 [E + S]: those experts, ascending, then -1
  std::size_t num_tiles = 0;       // int32 [1]
  std::size_t tiles = 0;           // int2 [max_tiles]: (expert, first pair) per tensor-core tile
  std::size_t sorted_pairs = 0;    // int32 [pairs]: pair index, grouped by expert, in pair order
  std::size_t pair_position = 0;   // int32 [pairs]: pair index -> position in sorted_pairs
  std::size_t membership = 0;      // uint32 [E + S, bit_words]: token bitmask per expert
  std::size_t membership_prefix = 0;  // int32 [E + S, bit_words]: set bits before each word
  std::size_t done_counters = 0;   // uint32 [1 + route_tiles]: route blocks finished, zeroed
                                   // by a memset node each forward (last one ranks / groups)
  int route_tiles = 0;             // ceil(m / 8) token tiles of the route kernel
  std::size_t shared_gate = 0;     // float [m]: the shared gate per token (MoeDims::shared_gate)
  std::size_t x_pairs = 0;         // bf16 [pairs, H]: a pair's gate_up input (MoeDims::scale_input)
  std::size_t h = 0;               // bf16 [pairs, I], sorted order
  std::size_t down_out = 0;        // float [pairs, H], sorted order
  std::size_t total = 0;

  template <class T>
  T* at(void* scratch, std::size_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(scratch) + offset);
  }
  template <class T>
  const T* at(const void* scratch, std::size_t offset) const {
    return reinterpret_cast<const T*>(static_cast<const char*>(scratch) + offset);
  }
};

ScratchLayout scratch_layout(const MoeDims& dims, int m);
std::size_t forward_scratch_bytes(const MoeDims& dims, int m);

struct MoeForwardArgs {
  MoeDims dims;
  int m = 0;
  const __nv_bfloat16* x = nullptr;       // [m, H]
  __nv_bfloat16* out = nullptr;           // [m, H]
  const __nv_bfloat16* router = nullptr;  // [E, H], then the shared gate's row (router_rows())
  const float* router_bias = nullptr;     // [E] or null: added to logits before scoring
  const float* selection_bias = nullptr;  // [E]: noaux_tc's correction bias (choice only), else null
  ExpertTable experts;                    // device arrays of E + S device pointers
  // Route telemetry record the route kernel accumulates into; disarmed (null) by default, and
  // then the route does exactly the work it does without it (route_telemetry.hpp).
  RouteTelemetry telemetry;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  ForwardPath path = ForwardPath::automatic;
  ForwardOptions options;                 // which kernels run (forward_options.hpp)
};

// Compute capability major*10+minor of the current device, and its multiprocessors (cached
// per device): the sm the rules of forward_options.hpp take.
int current_device_sm();
int current_device_multiprocessors();

// Throws moe::Error naming the bad value; forward calls it first.
void validate_forward_args(const MoeForwardArgs& args);

// Empty when `experts` holds its weights where `options` read them for a layer of `dims` on the
// current device (int4_layout, bf16_layout of forward_options.hpp), else what differs, both
// layouts named.
std::string weight_layout_mismatch(const MoeDims& dims, const ExpertTable& experts, const ForwardOptions& options);

// The path the forward will take for these args on the current device (automatic resolved;
// tensor_core becomes decode on devices without bf16 tensor cores, sm_75).
ForwardPath resolve_forward_path(const MoeForwardArgs& args);

// Whether this forward runs the mma or the stream expert GEMM family (forward_options.hpp's
// rules, on the current device).
bool runs_mma_gemm(const MoeForwardArgs& args);
bool runs_stream_gemm(const MoeForwardArgs& args);

void enqueue_moe_forward(const MoeForwardArgs& args, cudaStream_t stream);

// Loads, on the current device, every kernel a forward of a layer with these dims and options,
// its weights in `layouts`, can launch at any M (ForwardOptions::preload_kernels: MoeLayer
// calls it when it is built).
void preload_forward_kernels(const MoeDims& dims, const ForwardOptions& options, WeightLayouts layouts);

}  // namespace moe::kernels
