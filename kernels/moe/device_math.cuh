#pragma once
// Small device helpers shared by the MoE kernels.
#include <cuda_bf16.h>

#include <cstdint>

namespace moe::kernels::detail {

// bf16 pair in a 32-bit word -> two floats (exact; bf16 is the top half of a float).
__device__ __forceinline__ float bf16_lo(std::uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(std::uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }

// Dot of 8 bf16 pairs with fp32 accumulation into acc, in a fixed order.
__device__ __forceinline__ float dot8_bf16(uint4 a, uint4 b, float acc) {
  acc = fmaf(bf16_lo(a.x), bf16_lo(b.x), acc);
  acc = fmaf(bf16_hi(a.x), bf16_hi(b.x), acc);
  acc = fmaf(bf16_lo(a.y), bf16_lo(b.y), acc);
  acc = fmaf(bf16_hi(a.y), bf16_hi(b.y), acc);
  acc = fmaf(bf16_lo(a.z), bf16_lo(b.z), acc);
  acc = fmaf(bf16_hi(a.z), bf16_hi(b.z), acc);
  acc = fmaf(bf16_lo(a.w), bf16_lo(b.w), acc);
  acc = fmaf(bf16_hi(a.w), bf16_hi(b.w), acc);
  return acc;
}

// Dot of 8 int4 codes (one packed word) with 8 bf16 activations (uint4), unscaled.
__device__ __forceinline__ float dot8_int4(std::uint32_t q, uint4 x, float acc) {
  const std::uint32_t xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int q0 = static_cast<int>((q >> (8 * j)) & 0xFu) - 8;
    const int q1 = static_cast<int>((q >> (8 * j + 4)) & 0xFu) - 8;
    acc = fmaf(static_cast<float>(q0), bf16_lo(xs[j]), acc);
    acc = fmaf(static_cast<float>(q1), bf16_hi(xs[j]), acc);
  }
  return acc;
}

// The activations of an expert GEMM: gate_up's x is read-only for the whole forward, the
// non-coherent path. down's h was written by the kernel before (and, under programmatic
// launch, while this grid was already resident): a plain load, still cached in L1 (a read-only
// load of it would break the .nc contract).
template <bool kGateUp>
__device__ __forceinline__ uint4 load_activation(const uint4* at) {
  if constexpr (kGateUp) return __ldg(at);
  return *at;
}

// Indices the route stage wrote into scratch, clamped into [lo, hi] before use: when scratch is
// overwritten under a kernel (the bugs the probes reproduce), a forward must give wrong
// numbers the probe can see, not an illegal address that ends the process.
__device__ __forceinline__ int clamp_index(int v, int lo, int hi) { return max(lo, min(v, hi)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over lanes 0 .. lane (a Hillis-Steele scan, 5 shuffles).
__device__ __forceinline__ int warp_inclusive_scan(int v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += n;
  }
  return v;
}

// N warp sums at once (N a power of two, at most 32) in N - 1 + 5 - log2(N) shuffles, not 5 N:
// with warp_sum's partners (lane ^ 16, 8, ..., 1), a lane keeps half of the values it still
// holds at each step and sends the other half. Each addition pairs the same two values as
// warp_sum's (a + b == b + a), so each sum has warp_sum's bits. Lane l ends with the sum of
// v[l / (32 / N)]. Less code than N butterflies, for paths that run cold once a layer.
template <int N>
__device__ __forceinline__ float warp_sums_transposed(float (&v)[N]) {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "N: a power of two, at most 32");
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int step = 0; step < 5; ++step) {
    const int o = 16 >> step, half = (N >> step) / 2;
    if (half == 0) {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
      continue;
    }
    const bool upper = lane & o;  // keeps v[half ..], sends v[.. half - 1]
#pragma unroll
    for (int q = 0; q < half; ++q)
      v[q] = (upper ? v[q + half] : v[q]) + __shfl_xor_sync(0xffffffffu, upper ? v[q] : v[q + half], o);
  }
  return v[0];
}

__device__ __forceinline__ std::uint16_t to_bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }

// Asks L2 for the 128-byte line holding `at`; nothing waits for it. For data no earlier kernel
// writes (weights), fetched before a programmatic kernel's grid_dependency_wait.
__device__ __forceinline__ void prefetch_l2(const void* at) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
}

}  // namespace moe::kernels::detail
