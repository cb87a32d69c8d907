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
//               rounded to bf16. Shared experts are slots k..k+S-1 with weight 1.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/moe_types.hpp"
#include "kernels/moe/route_telemetry.hpp"

namespace moe::kernels {

// ForwardPath::automatic takes the decode kernels up to this M (tokens), tensor cores above.
// Why: the decode kernels stream each active expert's weights once per pass of up to 8 of its
// tokens and spend SIMT instructions per token, so they win while few tokens share an expert
// and keep every SM busy with a handful of active experts, where 64-row tensor-core tiles sit
// mostly empty. Crossover measured on an H200 with the bench in tests/gpu/test_moe_kernels.cu
// (graph replay, weights rotated past L2, decode v4): bf16 decode is faster up to M=4 and
// slower at M=8 (deepseek-v2-lite 340 vs 258 us, qwen3-30b-a3b 249 vs 211 us). int4: see
// int4_decode() below.
constexpr int kDecodeMaxTokensBf16 = 4;
constexpr int kDecodeMaxTokensInt4Simt = 2;
constexpr int kDecodeMaxTokensInt4 = 8;  // with int4_decode() other than simt
// ForwardPath::automatic's decode bound for a format (int4: by int4_decode()).
int decode_max_tokens(WeightFormat f);

// The int4 decode kernels: SIMT (codes to fp32, FMA: instruction bound, 9-19% of the read
// ceiling) or on tensor cores (Int4MmaWarp, int4_mma_warp.cuh: codes straight into mma.sync B
// fragments, up to 8 tokens a pass). automatic: SIMT at M=1, where the tensor-core gate_up
// loses (engine, deepseek-v2-lite: 329 vs 413 us an 8-layer step), tensor cores from M=2 to
// 8, where the decode path now ends for int4 (M=2 603 vs 650 us, M=4 886 vs 1812 us on the
// tensor-core tiles; session 10, docs/kernel-notes.md). simt: the SIMT kernels only, the
// decode path to M=2 and tensor-core tiles beyond (the engine before session 10).
// MOE_INT4_DECODE=simt or tensor_cores in the environment sets the start value (A/B timing).
enum class Int4Decode : int { automatic, simt, tensor_cores };
void set_int4_decode(Int4Decode mode);
Int4Decode int4_decode();
// Whether the decode path's int4 kernels at m tokens run on tensor cores.
bool int4_decode_on_tensor_cores(int m);

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
  const __nv_bfloat16* router = nullptr;  // [E, H]
  const float* router_bias = nullptr;     // [E] or null: added to logits before scoring
  ExpertTable experts;                    // device arrays of E + S device pointers
  // Route telemetry record the route kernel accumulates into; disarmed (null) by default, and
  // then the route does exactly the work it does without it (route_telemetry.hpp).
  RouteTelemetry telemetry;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  ForwardPath path = ForwardPath::automatic;
};

// Throws moe::Error naming the bad value; forward calls it first.
void validate_forward_args(const MoeForwardArgs& args);

// The path the forward will take for these args on the current device (automatic resolved;
// tensor_core becomes decode on devices without bf16 tensor cores, sm_75).
ForwardPath resolve_forward_path(const MoeForwardArgs& args);

void enqueue_moe_forward(const MoeForwardArgs& args, cudaStream_t stream);

// Programmatic dependent launch between the forward's decode kernels (sm_90+) lets each kernel
// be scheduled before the previous one ends, and gate_up stream the shared experts while the
// route kernel still runs. On by default: with decode v4 it is faster at M=1..4 on every
// shape measured (H200: deepseek-v2-lite bf16 M=1 54.0 vs 57.4 us, int4 45.6 vs 49.5 us).
// Switchable for A/B timing; MOE_PDL=0 in the environment starts it off.
void set_programmatic_launch(bool enabled);
bool programmatic_launch();

// On the decode path (m <= decode_max_tokens) on sm_90+ the route stage runs as one
// thread-block cluster (logits spread over its blocks, ranking and grouping in block 0's shared
// memory) instead of the one-kernel route with its memset node, counters and fences. Same bits
// either way. On by default (H200, deepseek-v2-lite bf16 M=1, kernel bench with programmatic
// launch: 48.9 us a layer, 49.7 us with the one-kernel route; session 5, docs/gpu-runs.md);
// MOE_ROUTE_CLUSTER=0 in the environment starts it off.
void set_cluster_route(bool enabled);
bool cluster_route();

// The cluster route's ranking block keeps one SM's registers until it ends, so the last
// block of the decode gate_up grid (full residency, two blocks an SM) starts only then, 9.5 us
// after the others at deepseek-v2-lite bf16 M=1, and ended the kernel 2-2.5 us after every
// other warp (session 9 timeline). With this on, that block streams no shared expert: its
// warps go straight to the routed units, which are ready when it starts. On by default;
// MOE_SPARE_LATE_BLOCK=0 in the environment starts it off.
void set_spare_late_block(bool enabled);
bool spare_late_block();

// The cluster route's blocks load their router rows into registers before they wait for the
// previous kernel (when a block's rows are at most 8 and H <= 2048), so that after the wait
// the logits need one load of x; otherwise the rows are asked of L2 and loaded after the wait
// (two L2 round trips at deepseek-v2-lite, 4.1 us of logits in the session 9 timeline). Same
// bits either way. MOE_HOLD_ROUTER_ROWS=0 in the environment starts it off.
void set_hold_router_rows(bool enabled);
bool hold_router_rows();

// How the route's ranking block picks each token's top-k (same ids either way): ranks (a
// thread a logit, compared with the token's E logits) or rounds (a warp a token, k rounds of
// a butterfly). automatic: ranks while a thread has one logit to place (decode sizes), rounds
// beyond. MOE_ROUTE_SELECT=ranks or rounds in the environment forces one (A/B timing).
enum class TopKSelect : int { automatic, ranks, rounds };
void set_top_k_select(TopKSelect select);
TopKSelect top_k_select();

}  // namespace moe::kernels
