#pragma once
// What the route's kernels (routing.cu) and its logits (route_logits.cuh) share: the block's
// shape, the bounds the kernels are built for, and the kernel parameters.
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/moe/forward_options.hpp"
#include "kernels/moe/route_logits_map.hpp"
#include "kernels/moe/route_telemetry.hpp"

namespace moe::kernels::route {

constexpr int kRouteThreads = kRouteWarps * 32;
constexpr int kMaxLogitsPerLane = 16;  // E <= 512
constexpr int kMaxTotalExperts = 1024;  // E + S
constexpr int kMaxTopK = 32;            // validate_forward_args' bound
constexpr int kClusterBlocks = 8;       // portable cluster size: easy to co-schedule in one GPC
constexpr int kLogitExperts = 4;  // router rows a thread loads at once (the one-token cluster route's SIMT sums)

struct RouteParams {
  const __nv_bfloat16* x;
  const __nv_bfloat16* router;
  const float* bias;
  int m, hidden, experts, shared, top_k, bit_words;
  bool softmax, renormalize;
  RouteTelemetry telemetry;  // armed: every routed pair is recorded where it is weighed
  float* logits;
  int* topk_ids;
  float* topk_weights;
  int* counts;
  int* offsets;
  int* num_active;
  int* active;
  int* num_tiles;
  int2* tiles;
  int* sorted_pairs;
  int* pair_position;
  std::uint32_t* membership;
  int* membership_prefix;
  unsigned int* counters;  // [0]: tiles done; [1 + tile]: expert blocks done for that tile
  TopKSelect select;       // ForwardOptions::top_k_select
  bool hold_router_rows;   // ForwardOptions::hold_router_rows (cluster route)
  bool tensor_core_logits; // logits_on_tensor_cores(m, the device's sm): a block's rows are a tile
  // Routing of real configs (route_kernel<true> only; MoeDims::plain_routing shapes never read them).
  const float* selection_bias;  // noaux_tc's correction bias [E], or null
  int n_group, topk_group;      // 1, 1 unless grouped
  bool group_top2;              // noaux_tc: a group scores the sum of its two best choices
  bool grouped;
  float routed_scaling;
  float* shared_gate;           // [m]: sigmoid(x . router row E), or null (no gate)
  __nv_bfloat16* x_pairs;       // [pairs, H]: each pair's gate_up input (scale_input), or null
};

}  // namespace moe::kernels::route
