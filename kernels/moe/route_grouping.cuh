#pragma once
// The route's grouping of (token, slot) pairs by expert (routing.cu's kernels call it): the
// forward's expert table (offsets, counts, the active list, the tensor-core tile list) and
// sorted_pairs / pair_position, pairs in token order within an expert. Every path writes the
// same values:
//   - one token (the cluster route at m = 1): group_one_token, beside the weighing;
//   - the cluster route up to kRouteTokens: group_decode_pairs, one membership word an expert;
//   - the one-kernel route below kGroupInGridFromTokens: group_pairs in the last tile's block;
//   - from there, over the grid (route_grouping_map.hpp): the ranking blocks write their
//     tiles' membership bytes, a warp an expert sums its words, every block places a share of
//     the pairs. One block grouping every pair took 582 us of qwen3-30b-a3b's M = 8192 route.
#include <cstdint>

#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward.hpp"
#include "kernels/moe/route_grouping_map.hpp"
#include "kernels/moe/route_params.cuh"

namespace moe::kernels::route {

// Past the active experts the list holds -1: expert kernels stop there without reading
// num_active first.
__device__ inline void pad_active_list(const RouteParams& p, int num_active, int total_experts) {
  for (int a = num_active + threadIdx.x; a < total_experts; a += blockDim.x) p.active[a] = -1;
}


// The expert table from each expert's pair count (count_of(e)), the whole block (kRouteThreads):
// each thread counts a contiguous run of experts, a block-wide scan places them. Every block
// gets the offsets in s_offsets; kPublish also writes the forward's table (p.counts when
// write_counts). The runs are counted twice rather than kept in a register array, so neither
// loop is unrolled (routing.cu's header: cold code).
template <bool kPublish, class CountOf>
__device__ inline void place_experts(const RouteParams& p, CountOf count_of, int* s_offsets, bool write_counts) {
  __shared__ int s_warp_totals[kRouteWarps][3];  // pairs, active experts, tiles
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int Et = p.experts + p.shared;
  const int per = (Et + kRouteThreads - 1) / kRouteThreads;
  // A thread's run of experts [e0, e1).
  const int e0 = min(static_cast<int>(threadIdx.x) * per, Et), e1 = min(e0 + per, Et);
  int own[3] = {0, 0, 0};
#pragma unroll 1
  for (int e = e0; e < e1; ++e) {
    const int c = count_of(e);
    own[0] += c;
    own[1] += c > 0;
    own[2] += (c + kTensorCoreTileRows - 1) / kTensorCoreTileRows;
  }
  // Exclusive prefix of the three sums over the threads (experts in id order), and totals.
  int before[3], total[3];
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const int inclusive = detail::warp_inclusive_scan(own[j], lane);
    if (lane == 31) s_warp_totals[warp][j] = inclusive;
    before[j] = inclusive - own[j];
  }
  __syncthreads();
  total[0] = total[1] = total[2] = 0;
#pragma unroll 1
  for (int w = 0; w < kRouteWarps; ++w) {
    const int below = w < warp;
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      before[j] += below * s_warp_totals[w][j];
      total[j] += s_warp_totals[w][j];
    }
  }
  int off = before[0], act = before[1], tile = before[2];
#pragma unroll 1
  for (int e = e0; e < e1; ++e) {
    const int c = count_of(e);
    s_offsets[e] = off;
    if (kPublish) {
      p.offsets[e] = off;
      if (write_counts) p.counts[e] = c;
      if (c > 0) p.active[act++] = e;
      for (int i = 0; i * kTensorCoreTileRows < c; ++i) p.tiles[tile++] = make_int2(e, off + i * kTensorCoreTileRows);
    }
    off += c;
  }
  if (kPublish) {
    if (threadIdx.x == 0) {
      p.offsets[Et] = total[0];
      *p.num_active = total[1];
      *p.num_tiles = total[2];
    }
    pad_active_list(p, total[1], Et);
  }
}

// The one-kernel route's grouping below kGroupInGridFromTokens tokens, in the last tile's block:
// a token picks an expert at most once, so a pair's rank inside its expert is the number of
// earlier tokens in that expert's membership words. The words (every one fits shared memory
// at these m), counts and offsets live in shared memory; the top-k ids come from topk_ids in
// scratch (ranked by other blocks too: read through L2).
constexpr int kSmemMembershipWords = 2048;
static_assert(kSmemMembershipWords >= kMaxTotalExperts * ((kGroupInGridFromTokens - 2) / 32 + 1),
              "group_pairs keeps every membership word of its m in shared memory");
__device__ inline void group_pairs(const RouteParams& p) {
  auto id_at = [&](int i) { return __ldcg(p.topk_ids + i); };
  __shared__ int s_counts[kMaxTotalExperts];
  __shared__ int s_offsets[kMaxTotalExperts];
  __shared__ std::uint32_t s_bits[kSmemMembershipWords];
  __shared__ int s_prefix[kSmemMembershipWords];
  const int E = p.experts, Et = p.experts + p.shared, W = p.bit_words, k = p.top_k;
  const int slots = k + p.shared;
  // Membership words: routed from topk_ids, shared experts hold every token.
  for (int i = threadIdx.x; i < Et * W; i += blockDim.x) {
    const int e = i / W, w = i % W;
    std::uint32_t b = 0;
    if (e >= E) {
      const int left = p.m - 32 * w;
      b = left >= 32 ? 0xFFFFFFFFu : ((1u << left) - 1u);
    }
    s_bits[i] = b;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < p.m * k; i += blockDim.x) {
    const int t = i / k;
    const int e = id_at(i);
    atomicOr(s_bits + e * W + (t >> 5), 1u << (t & 31));
  }
  __syncthreads();
  // One thread per expert walks its words: count and per-word prefix.
  for (int e = threadIdx.x; e < Et; e += blockDim.x) {
    int run = 0;
    for (int w = 0; w < W; ++w) {
      s_prefix[e * W + w] = run;
      run += __popc(s_bits[e * W + w]);
    }
    s_counts[e] = run;
  }
  __syncthreads();
  place_experts<true>(p, [&](int e) { return s_counts[e]; }, s_offsets, true);
  __syncthreads();
  for (int i = threadIdx.x; i < p.m * slots; i += blockDim.x) {
    const int t = i / slots, s = i % slots;
    const int e = s < k ? id_at(t * k + s) : E + (s - k);
    const int at = e * W + (t >> 5);
    const int pos = grouped_position(s_offsets[e], s_prefix[at], s_bits[at], t);
    p.sorted_pairs[pos] = i;
    p.pair_position[i] = pos;
  }
}

// The cluster route's grouping (m <= kRouteTokens: one membership word an expert, kept in
// shared memory). The words start with the shared experts' bits before the dependency wait
// (init_decode_membership); weigh_token sets each selection's bit; group_decode_pairs then
// places the experts (place_experts) and each pair finds its position from its expert's
// offset and word. A warp-0 scan of the experts 32 at a time behind four barriers cost 1.7 us
// a layer at deepseek-v2-lite bf16 M=1 (H200, the route with the grouping skipped, timing only).
__device__ inline void init_decode_membership(const RouteParams& p, std::uint32_t* membership) {
  const std::uint32_t all_tokens = p.m >= 32 ? 0xFFFFFFFFu : (1u << p.m) - 1u;
  for (int e = threadIdx.x; e < p.experts + p.shared; e += blockDim.x) membership[e] = e >= p.experts ? all_tokens : 0u;
}

__device__ inline void group_decode_pairs(const RouteParams& p, const int* ids, const std::uint32_t* membership) {
  __shared__ int s_offsets[kMaxTotalExperts];
  const int E = p.experts, k = p.top_k, slots = k + p.shared;
  place_experts<true>(p, [&](int e) { return __popc(membership[e]); }, s_offsets, true);
  __syncthreads();
  for (int i = threadIdx.x; i < p.m * slots; i += blockDim.x) {
    const int t = i / slots, s = i % slots;
    const int e = s < k ? ids[t * k + s] : E + (s - k);
    const int pos = grouped_position(s_offsets[e], 0, membership[e], t);
    p.sorted_pairs[pos] = i;
    p.pair_position[i] = pos;
  }
}

// The grouping of one token's pairs (m == 1: decode's commonest case), the same outputs as
// group_decode_pairs in one phase with no barrier, while warp 0 weighs the selections: every
// routed expert has at most one pair, so an expert's offset, its place among the active ones
// and its tile are all the number of selected ids below it (shared experts follow every
// routed one). It replaces group_decode_pairs' three phases and two barriers, which took
// 2.0 us of the ranking block's chain in a per-warp trace (deepseek-v2-lite bf16 M=1).
__device__ inline void group_one_token(const RouteParams& p, const int* selected) {
  const int E = p.experts, Et = p.experts + p.shared, k = p.top_k, active = k + p.shared;
  for (int e = threadIdx.x; e < Et; e += blockDim.x) {
    int below = e >= E ? e - E : 0;  // shared experts below e; the loop adds the selected ids
    // Its one pair, if any: token 0's slot that picked it (shared expert j is slot k + j).
    int slot = e >= E ? k + (e - E) : -1;
#pragma unroll 1
    for (int s = 0; s < k; ++s) {
      const int id = selected[s];
      below += id < e;
      if (id == e) slot = s;
    }
    const bool picked = slot >= 0;
    p.offsets[e] = below;
    p.counts[e] = picked;
    if (picked) {
      p.active[below] = e;
      p.tiles[below] = make_int2(e, below);
      p.sorted_pairs[below] = slot;
      p.pair_position[slot] = below;
    }
  }
  if (threadIdx.x == 0) {
    p.offsets[Et] = active;
    *p.num_active = active;
    *p.num_tiles = active;
  }
  pad_active_list(p, active, Et);
}

// The grouping over the grid (route_groups_in_grid), step 1, in the block that ranked token
// tile `tile` of `tiles` (its top-k ids stored and visible to the block): its byte of every
// expert's membership row (route_grouping_map.hpp); the last tile also zeroes the bytes past m.
// s_masks: E + S words of shared memory the block no longer needs (the tile's logits: the
// kernel's static shared memory stays under 48 KB).
__device__ inline void write_tile_membership(const RouteParams& p, int tile, int tiles, int t0, int tn,
                                             std::uint32_t* s_masks) {
  const int E = p.experts, Et = p.experts + p.shared, k = p.top_k;
  for (int e = threadIdx.x; e < Et; e += blockDim.x) s_masks[e] = e < E ? 0u : (1u << tn) - 1u;
  __syncthreads();
  for (int i = threadIdx.x; i < tn * k; i += blockDim.x) {
    const int e = p.topk_ids[t0 * k + i];
    if (e >= 0 && e < E) atomicOr(&s_masks[e], 1u << (i / k));
  }
  __syncthreads();
  auto* bytes = reinterpret_cast<std::uint8_t*>(p.membership);
  const int span = tile == tiles - 1 ? 4 * p.bit_words - tile : 1;
  for (int i = threadIdx.x; i < Et * span; i += blockDim.x) {
    const int e = i / span, b = i % span;
    bytes[membership_tile_byte(e, tile + b, p.bit_words)] = b == 0 ? static_cast<std::uint8_t>(s_masks[e]) : 0;
  }
}

// Step 2, a warp an expert: the set bits before each of its words (membership_prefix) and its
// pair count.
__device__ inline void prefix_membership_words(const RouteParams& p, int e) {
  const int lane = threadIdx.x & 31, W = p.bit_words;
  const std::uint32_t* words = p.membership + static_cast<std::size_t>(e) * W;
  int* prefix = p.membership_prefix + static_cast<std::size_t>(e) * W;
  int carry = 0;
  for (int w0 = 0; w0 < W; w0 += 32) {
    const int w = w0 + lane;
    const int c = w < W ? __popc(words[w]) : 0;
    const int inclusive = detail::warp_inclusive_scan(c, lane);
    if (w < W) prefix[w] = carry + inclusive - c;
    carry += __shfl_sync(0xffffffffu, inclusive, 31);
  }
  if (lane == 0) p.counts[e] = carry;
}

// Step 3, every block: the experts' offsets from their counts (block 0 also writes the
// forward's expert table), then its kGroupPairsPerBlock pairs' places.
__device__ inline void place_grouped_pairs(const RouteParams& p) {
  __shared__ int s_counts[kMaxTotalExperts];
  __shared__ int s_offsets[kMaxTotalExperts];
  const int E = p.experts, Et = p.experts + p.shared, W = p.bit_words, k = p.top_k, slots = k + p.shared;
  for (int e = threadIdx.x; e < Et; e += blockDim.x) s_counts[e] = p.counts[e];
  __syncthreads();
  const auto count_of = [&](int e) { return s_counts[e]; };
  if (blockIdx.x == 0)
    place_experts<true>(p, count_of, s_offsets, false);
  else
    place_experts<false>(p, count_of, s_offsets, false);
  __syncthreads();
  const int pairs = p.m * slots, first = static_cast<int>(blockIdx.x) * kGroupPairsPerBlock;
  const int end = min(pairs, first + kGroupPairsPerBlock);
  for (int i = first + static_cast<int>(threadIdx.x); i < end; i += blockDim.x) {
    const int t = i / slots, s = i % slots;
    const int e = s < k ? p.topk_ids[t * k + s] : E + (s - k);
    if (e < 0 || e >= Et) continue;  // scratch overwritten under a running forward: wrong numbers, no stray store
    const std::size_t at = static_cast<std::size_t>(e) * W + (t >> 5);
    const int pos = grouped_position(s_offsets[e], p.membership_prefix[at], p.membership[at], t);
    p.sorted_pairs[pos] = i;
    p.pair_position[i] = pos;
  }
}

}  // namespace moe::kernels::route
