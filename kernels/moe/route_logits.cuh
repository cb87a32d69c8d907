#pragma once
// The route's logits, x [m, H] times the router's rows [E, H]: a block computes up to 16
// experts' logits for up to 8 tokens and hands each to store(e, t, logit). From sm_80 and two
// tokens on tensor cores (logits_mma): the experts' rows are the 16-row A tile of
// mma.m16n8k16 and the tokens its 8 columns, so a lane loads one 16-byte vector of two rows
// and one of a token a 32-k unit, where the SIMT sums (block_logits: one token, and below
// sm_80) spend 8 FMAs, conversions and a warp reduction a token and expert: at qwen3-30b-a3b
// M = 8 (16 experts a cluster block) about 1,500 instructions a thread against 40. Every route
// kernel of a forward sums the same way (logits_on_tensor_cores), so they write the same bits:
// the K range in 32-k units dealt to the 8 warps in turn, a unit's two mma steps in order, then
// the warps' partials added in warp order, plus the bias.
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/device_math.cuh"
#include "kernels/moe/expert_mma_fragments.hpp"
#include "kernels/moe/mma_sync.cuh"
#include "kernels/moe/route_logits_map.hpp"
#include "kernels/moe/route_params.cuh"

namespace moe::kernels::route {

template <int kExperts, class Store>
__device__ inline void store_logits(const RouteParams& p, const float (&partial)[kRouteWarps][kExperts][kRouteTokens], int e0,
                             int ne, int t0, int tn, Store store);

// Logits of experts e0 .. e0 + ne - 1 (ne <= kExperts) for tokens t0 .. t0 + tn - 1
// (tn <= kTokens <= kRouteTokens; kTokens bounds the unrolled token loop, so a one-token
// kernel carries one copy), handed to store(e, t, logit) by thread t of the block. Every expert is
// summed the same way whatever kExperts (thread i takes vectors i, i + 256, ...; warp sums,
// then the 8 warps' partials in warp order), so every route kernel writes the same bits. The
// router rows of all kExperts experts are loaded before any is used: that many loads in flight.
template <int kExperts, int kTokens = kRouteTokens, class Store>
__device__ inline void block_logits(const RouteParams& p, int e0, int ne, int t0, int tn, Store store) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __shared__ float partial[kRouteWarps][kExperts][kRouteTokens];
  float acc[kExperts][kTokens];
#pragma unroll
  for (int j = 0; j < kExperts; ++j)
#pragma unroll
    for (int t = 0; t < kTokens; ++t) acc[j][t] = 0.f;
  const int vecs = p.hidden / 8;
  const uint4* xs = reinterpret_cast<const uint4*>(p.x + static_cast<std::size_t>(t0) * p.hidden);
#pragma unroll 4
  for (int v = threadIdx.x; v < vecs; v += kRouteThreads) {
    uint4 w[kExperts];
#pragma unroll
    for (int j = 0; j < kExperts; ++j) {
      const int e = e0 + min(j, ne - 1);  // past ne: a repeat load whose sum is never stored
      w[j] = __ldg(reinterpret_cast<const uint4*>(p.router + static_cast<std::size_t>(e) * p.hidden) + v);
    }
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < tn) {
        const uint4 xv = __ldg(xs + static_cast<std::size_t>(t) * vecs + v);
#pragma unroll
        for (int j = 0; j < kExperts; ++j) acc[j][t] = detail::dot8_bf16(w[j], xv, acc[j][t]);
      }
    }
  }
  constexpr int kLanesPerSum = 32 / kExperts;  // lanes l .. l + kLanesPerSum - 1 end with expert l / kLanesPerSum's
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < tn) {  // no sums over the empty token slots (m = 1: 1 of 8)
      float v[kExperts];
#pragma unroll
      for (int j = 0; j < kExperts; ++j) v[j] = acc[j][t];
      const float s = detail::warp_sums_transposed(v);
      if (lane % kLanesPerSum == 0) partial[warp][lane / kLanesPerSum][t] = s;
    }
  }
  store_logits<kExperts>(p, partial, e0, ne, t0, tn, store);
}

// The 8 warps' partial sums of each logit, added in warp order, plus the bias.
template <int kExperts, class Store>
__device__ inline void store_logits(const RouteParams& p, const float (&partial)[kRouteWarps][kExperts][kRouteTokens], int e0,
                             int ne, int t0, int tn, Store store) {
  __syncthreads();
  for (int i = threadIdx.x; i < ne * kRouteTokens; i += kRouteThreads) {
    const int j = i / kRouteTokens, t = i % kRouteTokens;
    if (t < tn) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < kRouteWarps; ++w) s += partial[w][j][t];
      store(e0 + j, t0 + t, s + (p.bias && e0 + j < p.experts ? p.bias[e0 + j] : 0.f));  // row E: the gate's, unbiased
    }
  }
  __syncthreads();  // partial is reused by the next call
}

// A lane's 8 bf16 of `row` at k, zeros past H (vector_in_row).
__device__ __forceinline__ uint4 row_vector(const __nv_bfloat16* row, int k, int hidden) {
  return vector_in_row(k, hidden) ? __ldg(reinterpret_cast<const uint4*>(row + k)) : make_uint4(0, 0, 0, 0);
}

// One 32-k unit into the lane's C fragment: its vectors of rows g and g + 8 and of token g,
// the two k16 steps of expert_mma_fragments.hpp's bf16 map (tested by the warp emulation).
__device__ __forceinline__ void logit_unit(float (&c)[4], const uint4& row_g, const uint4& row_g8, const uint4& token_g) {
  std::uint32_t a0[4], a1[4], b[4];
  copy_words(a0, row_g);
  copy_words(a1, row_g8);
  copy_words(b, token_g);
  mma_16816(c, expert_mma::bf16_a(a0, a1, 0), expert_mma::bf16_b(b, 0));
  mma_16816(c, expert_mma::bf16_a(a0, a1, 1), expert_mma::bf16_b(b, 1));
}

// The warps' partial sums of a tile, one array a kernel whatever its stores (4 KB).
using TilePartials = float[kRouteWarps][kTileExperts][kRouteTokens];
__device__ inline TilePartials& tile_partials() {
  __shared__ TilePartials partial;
  return partial;
}

// The lane's C fragment (experts g, g + 8; tokens 2q, 2q + 1) into the warps' partials, then
// their sums in warp order, plus the bias, to store.
template <class Store>
__device__ void store_tile_logits(const RouteParams& p, const float (&c)[4], int e0, int ne, int t0, int tn, Store store) {
  TilePartials& partial = tile_partials();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  partial[warp][g][2 * q] = c[0];
  partial[warp][g][2 * q + 1] = c[1];
  partial[warp][g + 8][2 * q] = c[2];
  partial[warp][g + 8][2 * q + 1] = c[3];
  store_logits<kTileExperts>(p, partial, e0, ne, t0, tn, store);
}

// The row of the tile's expert i (experts e0 .. e0 + ne - 1) and of its token t.
__device__ __forceinline__ const __nv_bfloat16* router_row(const RouteParams& p, int e0, int ne, int i) {
  return p.router + static_cast<std::size_t>(e0 + tile_member(i, ne)) * p.hidden;
}
__device__ __forceinline__ const __nv_bfloat16* token_row(const RouteParams& p, int t0, int tn, int t) {
  return p.x + static_cast<std::size_t>(t0 + tile_member(t, tn)) * p.hidden;
}

// Logits of experts e0 .. e0 + ne - 1 (ne <= 16) for tokens t0 .. t0 + tn - 1 (tn <= 8) on
// tensor cores, the rows read now.
template <class Store>
__device__ void logits_mma(const RouteParams& p, int e0, int ne, int t0, int tn, Store store) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  const __nv_bfloat16 *rg = router_row(p, e0, ne, g), *rg8 = router_row(p, e0, ne, g + 8), *xg = token_row(p, t0, tn, g);
  const int units = logit_units(p.hidden);
  float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int u = warp; u < units; u += kRouteWarps) {  // warp_unit(warp, 0), warp_unit(warp, 1), ...
    const int k = unit_lane_k(u, q);
    logit_unit(c, row_vector(rg, k, p.hidden), row_vector(rg8, k, p.hidden), row_vector(xg, k, p.hidden));
  }
  store_tile_logits(p, c, e0, ne, t0, tn, store);
}

// Logits of experts e0 .. e0 + ne - 1 (any ne) for tokens t0 .. t0 + tn - 1 (tn <= 8): 16
// experts a pass on tensor cores where p.tensor_core_logits, else block_logits' SIMT sums.
template <class Store>
__device__ void logits(const RouteParams& p, int e0, int ne, int t0, int tn, Store store) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (p.tensor_core_logits) {
    for (int e = e0; e < e0 + ne; e += kTileExperts) logits_mma(p, e, min(kTileExperts, e0 + ne - e), t0, tn, store);
    return;
  }
#endif
  for (int e = e0; e < e0 + ne; ++e) block_logits<1>(p, e, 1, t0, tn, store);
}

// One token's SIMT form of HeldRouterTile (below): a cluster block's rows (at most 8) when one
// 16-byte vector a thread covers a row (H <= 2048), summed as block_logits sums them.
constexpr int kHeldRows = 8;
struct HeldRouterRows {
  uint4 w[kHeldRows];
  __device__ static bool fits(const RouteParams& p, int count) {
    return count >= 1 && count <= kHeldRows && p.hidden <= 8 * kRouteThreads;
  }
  __device__ void load(const RouteParams& p, int first, int count) {
    const int v = min(static_cast<int>(threadIdx.x), p.hidden / 8 - 1);  // past H: never summed
#pragma unroll
    for (int j = 0; j < kHeldRows; ++j)
      w[j] = __ldg(reinterpret_cast<const uint4*>(p.router + static_cast<std::size_t>(first + min(j, count - 1)) * p.hidden) +
                   v);
  }
  // block_logits' sums from the held rows, for tokens 0 .. m - 1: same order, so the same bits.
  template <class Store>
  __device__ void logits(const RouteParams& p, int m, int first, int count, Store store) const {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __shared__ float partial[kRouteWarps][kHeldRows][kRouteTokens];
    const bool in_row = static_cast<int>(threadIdx.x) < p.hidden / 8;
    for (int t = 0; t < m; ++t) {
      const uint4* x_row = reinterpret_cast<const uint4*>(p.x + static_cast<std::size_t>(t) * p.hidden);
      const uint4 xv = in_row ? __ldg(x_row + threadIdx.x) : make_uint4(0, 0, 0, 0);
      float v[kHeldRows];
#pragma unroll
      for (int j = 0; j < kHeldRows; ++j) v[j] = in_row ? detail::dot8_bf16(w[j], xv, 0.f) : 0.f;
      const float s = detail::warp_sums_transposed(v);  // 9 shuffles for the 8 rows, not 40
      if (lane % (32 / kHeldRows) == 0) partial[warp][lane / (32 / kHeldRows)][t] = s;
    }
    store_logits<kHeldRows>(p, partial, first, count, 0, m, store);
  }
};

// A cluster block's 16 router rows held in registers across the dependency wait (sm_90): no
// earlier kernel writes the router, so they are loaded while the previous kernel still runs,
// and after the wait the logits cost one load of x. A lane holds its vectors of rows g and g + 8
// for its warp's units: H <= 2048 (8 units a warp, 64 registers).
constexpr int kHeldUnits = 8;
struct HeldRouterTile {
  uint4 row_g[kHeldUnits], row_g8[kHeldUnits];
  __device__ static bool fits(const RouteParams& p, int count) {
    return count >= 1 && count <= kTileExperts && p.hidden <= kHeldUnits * kRouteWarps * kUnitK;
  }
  __device__ void load(const RouteParams& p, int first, int count) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const __nv_bfloat16 *rg = router_row(p, first, count, g), *rg8 = router_row(p, first, count, g + 8);
#pragma unroll
    for (int j = 0; j < kHeldUnits; ++j) {
      const int k = unit_lane_k(warp_unit(warp, j), q);
      row_g[j] = row_vector(rg, k, p.hidden);
      row_g8[j] = row_vector(rg8, k, p.hidden);
    }
  }
  // logits_mma's sums from the held rows, for tokens 0 .. m - 1 (m <= 8): the same units in
  // the same order, so the same bits.
  template <class Store>
  __device__ void logits(const RouteParams& p, int m, int first, int count, Store store) const {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const __nv_bfloat16* xg = token_row(p, 0, m, g);
    const int units = logit_units(p.hidden);
    uint4 x[kHeldUnits];
#pragma unroll
    for (int j = 0; j < kHeldUnits; ++j) x[j] = row_vector(xg, unit_lane_k(warp_unit(warp, j), q), p.hidden);
    float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < kHeldUnits; ++j)
      if (warp_unit(warp, j) < units) logit_unit(c, row_g[j], row_g8[j], x[j]);
    store_tile_logits(p, c, first, count, 0, m, store);
  }
};

}  // namespace moe::kernels::route
