#pragma once
// The route's ranking (routing.cu's kernels call it): each token's top-k experts and their
// weights from its logits in shared memory, stored to topk_ids / topk_weights (and telemetry)
// by store_selection, the one place every route kernel weighs a pair. Plain top-k by counted
// ranks (select_top_k) or by rounds (select_top_k_rounds), then a warp a token weighs
// (weigh_token); the routing of real configs a warp a token (route_token_rich) and its scaled
// gate_up inputs (write_pair_inputs). This code runs once a layer on one SM, cold: routing.cu's
// header says why its loops are not unrolled.
#include <cmath>
#include <cstdint>

#include "kernels/moe/device_math.cuh"
#include "kernels/moe/route_params.cuh"
#include "kernels/moe/route_telemetry.cuh"

namespace moe::kernels::route {

constexpr int kLogitsStride = kMaxLogitsPerLane * 32;  // a token's row in TileLogits

// A token tile's logits in shared memory, where every thread of the ranking block reads them.
using TileLogits = float[kRouteTokens][kLogitsStride];

// The order top-k ranks by: value descending, then index ascending; NaN as the lowest value, so
// the order stays total and every logit gets a distinct rank whatever the input.
__device__ __forceinline__ float order_key(float v) { return isnan(v) ? -INFINITY : v; }

// Top-k of each token of the tile, the whole block at once: the logit (t, e) has rank
// #{e' : (t, e') comes before (t, e)}, and the k first ranks land in distinct slots. A thread
// compares one logit with its token's row (broadcast reads), with no selection rounds: one
// warp picking k times, a shuffle reduction each, took 4 us of the route at E = 64, k = 6.
__device__ inline void select_top_k(const RouteParams& p, const TileLogits& logits, int tn, int* selected) {
  const int E = p.experts;
  for (int i = threadIdx.x; i < tn * E; i += blockDim.x) {
    const int t = i / E, e = i % E;
    const float* row = logits[t];
    const float v = order_key(row[e]);
    int rank = 0;
#pragma unroll 4  // not 8: the code runs cold (header)
    for (int e2 = 0; e2 < E; ++e2) {
      const float u = order_key(row[e2]);
      rank += (u > v) | ((u == v) & (e2 < e));
    }
    if (rank < p.top_k) selected[t * kMaxTopK + rank] = e;
  }
}

// Selection `lane` of a token, its pair index `at`: the id and weight to scratch, and telemetry.
// Every route kernel weighs each pair once and stores it here: the one place telemetry accumulates.
__device__ __forceinline__ void store_selection(const RouteParams& p, int at, int id, float w, int lane) {
  p.topk_ids[at] = id;
  p.topk_weights[at] = w;
  if (p.telemetry.header) {
    detail::record_routed_pair(p.telemetry, at == 0 && p.telemetry.inject ? p.telemetry.inject_id : id);
    if (lane == 0) detail::record_routed_total(p.telemetry, static_cast<unsigned int>(p.top_k));
  }
}

// One warp weighs the selections of tile token t (global token t0 + t): softmax over all E
// logits (summed lane-strided, then a butterfly, in a fixed order) or sigmoid, optionally
// renormalised over the k. Lane r < k writes selection r; `ids_copy` (may be null) receives
// the ids too, at the same index as topk_ids, and `membership` (may be null; tile token t0 + t
// < 32) gets the token's bit set in each selected expert's word.
__device__ inline void weigh_token(const RouteParams& p, const TileLogits& logits, const int* selected, int t, int t0,
                            int lane, int* ids_copy, std::uint32_t* membership) {
  const int E = p.experts;
  const float* row = logits[t];
  const bool mine = lane < p.top_k;
  const int my_id = mine ? selected[t * kMaxTopK + lane] : 0;
  const float my_val = mine ? row[my_id] : 0.f;
  float w;
  if (p.softmax) {
    const float top_val = row[selected[t * kMaxTopK]];
    float s = 0.f;
#pragma unroll 1  // one copy of expf's code, not E / 32 (header: cold code)
    for (int e = lane; e < E; e += 32) s += expf(row[e] - top_val);
    s = detail::warp_sum(s);
    w = expf(my_val - top_val) / s;
  } else {
    w = 1.0f / (1.0f + expf(-my_val));
  }
  if (p.renormalize) w = w / detail::warp_sum(mine ? w : 0.f);
  if (mine) {
    const int at = (t0 + t) * p.top_k + lane;
    store_selection(p, at, my_id, w, lane);
    if (ids_copy) ids_copy[at] = my_id;
    if (membership) atomicOr(membership + my_id, 1u << (t0 + t));
  }
}

// The same selection, a warp a token: k rounds, each taking the best logit not yet taken (every
// lane its E / 32 logits, read from shared memory each round so the loop need not be unrolled,
// then a butterfly) in the order select_top_k ranks by. A thread of
// select_top_k compares one logit with all E: with several tokens of E = 128 each thread walks
// 4 x 128 compares, where a round costs a warp E / 32 compares and 5 shuffle steps.
__device__ inline void select_top_k_rounds(const RouteParams& p, const TileLogits& logits, int tn, int* selected) {
  const int E = p.experts, lane = threadIdx.x & 31;
  for (int t = threadIdx.x >> 5; t < tn; t += kRouteWarps) {
    const float* row = logits[t];
    std::uint32_t taken = 0;  // bit j: this lane's logit lane + 32 j is selected
    for (int r = 0; r < p.top_k; ++r) {
      float bv = -INFINITY;
      int bi = E;  // E: none (every lane's candidates may be taken)
#pragma unroll 1
      for (int j = 0, e = lane; e < E; ++j, e += 32) {
        const float v = order_key(row[e]);
        if (!((taken >> j) & 1u) && (bi == E || v > bv)) {  // ascending e: ties keep the first
          bv = v;
          bi = e;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi != E && (bi == E || ov > bv || (ov == bv && oi < bi))) {
          bv = ov;
          bi = oi;
        }
      }
      // top_k <= E (validated), so a round always finds one; lane bi % 32 marks it taken.
      if ((bi & 31) == lane) taken |= 1u << (bi >> 5);
      if (lane == 0) selected[t * kMaxTopK + r] = bi;
    }
  }
}

// Ranks and weighs the tile's tokens: the block selects, then a warp weighs a token.
// Selection by ranks while a thread has one logit to place (tn x E <= threads: one token at
// E <= 256, four at E <= 64), by rounds beyond (ForwardOptions::top_k_select overrides for A/B timing; same
// ids either way).
__device__ inline void select_tile(const RouteParams& p, const TileLogits& logits, int tn, int* selected) {
  const bool rounds = p.select == TopKSelect::rounds ||
                      (p.select == TopKSelect::automatic && tn * p.experts > static_cast<int>(blockDim.x));
  if (rounds) select_top_k_rounds(p, logits, tn, selected);
  else select_top_k(p, logits, tn, selected);
}

__device__ inline void rank_tile(const RouteParams& p, const TileLogits& logits, int t0, int tn, int* ids_copy,
                          std::uint32_t* membership) {
  __shared__ int selected[kRouteTokens * kMaxTopK];
  select_tile(p, logits, tn, selected);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int t = warp; t < tn; t += kRouteWarps) weigh_token(p, logits, selected, t, t0, lane, ids_copy, membership);
}

// The routing of real configs (MoeDims::plain_routing false; reference.hpp's route_token says
// what the models compute), a warp a token: lane l holds the scores and choices of experts
// l, l + 32, ... in registers (unrolled: E <= 512), the groups are ranked a lane a group, and
// the top-k is taken in k rounds over the kept experts, each round's butterfly carrying the
// winner's unbiased score so the weights need no second look-up. `row` (the token's logits in
// shared memory) is overwritten with the choices. Ties as everywhere: value descending, index
// ascending (groups too). Only route_kernel<kRich = true, ...> runs it, so the plain path's
// registers and code are unchanged.
__device__ inline void route_token_rich(const RouteParams& p, float* row, int token, int lane) {
  constexpr unsigned kAll = 0xffffffffu;
  const int E = p.experts;
  float score[kMaxLogitsPerLane], choice[kMaxLogitsPerLane];
  float top = -INFINITY, sum = 0.f;
  if (p.softmax) {
#pragma unroll
    for (int j = 0; j < kMaxLogitsPerLane; ++j)
      if (lane + 32 * j < E) top = fmaxf(top, order_key(row[lane + 32 * j]));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(kAll, top, o));
#pragma unroll
    for (int j = 0; j < kMaxLogitsPerLane; ++j)
      if (lane + 32 * j < E) sum += expf(row[lane + 32 * j] - top);
    sum = detail::warp_sum(sum);
  }
  std::uint32_t out = 0;  // bit j: expert lane + 32 j is not a candidate (past E, dropped group, taken)
#pragma unroll
  for (int j = 0; j < kMaxLogitsPerLane; ++j) {
    const int e = lane + 32 * j;
    if (e < E) {
      const float v = row[e];
      score[j] = p.softmax ? expf(v - top) / sum : 1.0f / (1.0f + expf(-v));
      choice[j] = score[j] + (p.selection_bias ? p.selection_bias[e] : 0.f);
    } else {
      score[j] = 0.f;
      choice[j] = -INFINITY;
      out |= 1u << j;
    }
  }
  if (p.grouped && p.n_group > 1) {
    __syncwarp();
#pragma unroll
    for (int j = 0; j < kMaxLogitsPerLane; ++j)
      if (lane + 32 * j < E) row[lane + 32 * j] = choice[j];
    __syncwarp();
    const int per = E / p.n_group;
    float group = -INFINITY;
    if (lane < p.n_group) {
      float b1 = -INFINITY, b2 = -INFINITY;
#pragma unroll 1
      for (int e = lane * per; e < (lane + 1) * per; ++e) {
        const float v = order_key(row[e]);
        if (v > b1) {
          b2 = b1;
          b1 = v;
        } else if (v > b2) {
          b2 = v;
        }
      }
      group = p.group_top2 && per >= 2 ? b1 + b2 : b1;
    }
    int rank = 0;
#pragma unroll 1
    for (int g = 0; g < p.n_group; ++g) {
      const float o = __shfl_sync(kAll, group, g);
      rank += (o > group) | ((o == group) & (g < lane));
    }
    const unsigned kept = __ballot_sync(kAll, lane < p.n_group && rank < p.topk_group);
#pragma unroll
    for (int j = 0; j < kMaxLogitsPerLane; ++j)
      if (lane + 32 * j < E && !((kept >> ((lane + 32 * j) / per)) & 1u)) out |= 1u << j;
  }
  int my_id = 0;
  float my_score = 0.f;
#pragma unroll 1
  for (int r = 0; r < p.top_k; ++r) {
    float bv = -INFINITY, bs = 0.f;
    int bi = E;  // E: none
#pragma unroll
    for (int j = 0; j < kMaxLogitsPerLane; ++j) {
      const float v = order_key(choice[j]);
      if (!((out >> j) & 1u) && (bi == E || v > bv)) {  // ascending e: ties keep the first
        bv = v;
        bi = lane + 32 * j;
        bs = score[j];
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(kAll, bv, o), os = __shfl_xor_sync(kAll, bs, o);
      const int oi = __shfl_xor_sync(kAll, bi, o);
      if (oi != E && (bi == E || ov > bv || (ov == bv && oi < bi))) {
        bv = ov;
        bi = oi;
        bs = os;
      }
    }
    // Kept groups hold at least k experts (validate_shape), so every round finds one.
    if (bi != E && (bi & 31) == lane) out |= 1u << (bi >> 5);
    if (lane == r) {
      my_id = bi == E ? 0 : bi;
      my_score = bs;
    }
  }
  const bool mine = lane < p.top_k;
  float w = mine ? my_score : 0.f;
  if (p.renormalize) w = w / detail::warp_sum(w);
  w *= p.routed_scaling;
  if (mine) store_selection(p, token * p.top_k + lane, my_id, w, lane);
}

// scale_input (Llama-4, top-1): each pair's gate_up input row, bf16(x * w) for the routed
// slot and x itself for the shared ones, for the tile's tokens (their weights are stored and
// visible to this block), so the expert kernels read a pair's own row.
__device__ inline void write_pair_inputs(const RouteParams& p, int t0, int tn) {
  const int slots = p.top_k + p.shared, vecs = p.hidden / 8;
  for (int i = threadIdx.x; i < tn * slots * vecs; i += kRouteThreads) {
    const int t = t0 + i / (slots * vecs), s = (i / vecs) % slots, v = i % vecs;
    const uint4 xv = __ldg(reinterpret_cast<const uint4*>(p.x + static_cast<std::size_t>(t) * p.hidden) + v);
    uint4 o = xv;
    if (s < p.top_k) {
      const float w = p.topk_weights[t * p.top_k + s];
      const std::uint32_t in[4] = {xv.x, xv.y, xv.z, xv.w};
      std::uint32_t r[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        r[j] = detail::to_bf16_bits(detail::bf16_lo(in[j]) * w) |
               (static_cast<std::uint32_t>(detail::to_bf16_bits(detail::bf16_hi(in[j]) * w)) << 16);
      o = make_uint4(r[0], r[1], r[2], r[3]);
    }
    reinterpret_cast<uint4*>(p.x_pairs + (static_cast<std::size_t>(t) * slots + s) * p.hidden)[v] = o;
  }
}

}  // namespace moe::kernels::route
