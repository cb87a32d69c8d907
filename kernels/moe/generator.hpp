#pragma once
// Counter-based generator: every weight, scale and input element is a pure function
//   value = f(seed, TensorKind, expert, index)
// of a 64-bit hash, so the GPU fills buffers element by element in any order and the CPU
// reference derives exactly the same values for just the experts it needs, with nothing
// copied back. The float arithmetic below is a single rounding per value (no a*b+c that a
// compiler could contract into an FMA on one side and not the other).
#include <cmath>
#include <cstdint>

#include "kernels/moe/bf16.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe::kernels {

// splitmix64's finaliser: a bijection with full avalanche.
__host__ __device__ __forceinline__ std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// The per-tensor stream key: (seed, kind, expert) hashed once, so the per-element hash is one
// mix of key + index (two mixes keep adjacent indices and adjacent experts uncorrelated).
__host__ __device__ __forceinline__ std::uint64_t stream_key(std::uint64_t seed, TensorKind kind,
                                                              std::uint32_t expert) {
  return mix64(mix64(seed ^ 0x6A09E667F3BCC909ull) +
               ((static_cast<std::uint64_t>(kind) << 32) | expert));
}

__host__ __device__ __forceinline__ std::uint64_t element_hash(std::uint64_t key,
                                                                std::uint64_t index) {
  return mix64(key + (index + 1) * 0x9E3779B97F4A7C15ull);
}

// Uniform in [-1, 1) with 24 bits: exact as a float.
__host__ __device__ __forceinline__ float hash_to_pm1(std::uint64_t h) {
  const int k = static_cast<int>(h >> 40) - (1 << 23);  // [-2^23, 2^23)
  return static_cast<float>(k) * (1.0f / 8388608.0f);
}

// Uniform in [0, 1) with 23 bits (exact; 0.5 + u is exact too).
__host__ __device__ __forceinline__ float hash_to_unit(std::uint64_t h) {
  return static_cast<float>(static_cast<int>(h >> 41)) * (1.0f / 8388608.0f);
}

// int4 code in [-8, 7] from the top nibble.
__host__ __device__ __forceinline__ int hash_to_q4(std::uint64_t h) {
  return static_cast<int>(h >> 60) - 8;
}

// 1/sqrt(K): computed once on the host and passed to kernels so both sides use one float.
inline float inv_sqrt(int k) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(k))); }

// bf16 weight or input value: uniform [-1,1) times `scale`, rounded to bf16 (RNE).
__host__ __device__ __forceinline__ std::uint16_t generated_bf16_bits(std::uint64_t key,
                                                                       std::uint64_t index,
                                                                       float scale) {
  return float_to_bf16_bits(hash_to_pm1(element_hash(key, index)) * scale);
}

// int4 group scale: (0.5 + u) * base with base = 1/(8 sqrt(K)), rounded to bf16. With q
// uniform on [-8, 7] the weights then have about the spread of the bf16 ones.
__host__ __device__ __forceinline__ std::uint16_t generated_scale_bits(std::uint64_t key,
                                                                        std::uint64_t index,
                                                                        float base) {
  return float_to_bf16_bits((0.5f + hash_to_unit(element_hash(key, index))) * base);
}

inline float int4_scale_base(int k) {
  return static_cast<float>(1.0 / (8.0 * std::sqrt(static_cast<double>(k))));
}

// Which TensorKind holds a weight tensor's int4 scales.
constexpr TensorKind scale_kind_of(TensorKind weights) {
  return weights == TensorKind::gate_up ? TensorKind::int4_scale_gate_up
                                        : TensorKind::int4_scale_down;
}

}  // namespace moe::kernels
