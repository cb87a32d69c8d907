#pragma once
// int4 group-quantised weights, group 128 along K.
//
// A matrix W[rows][K] (K contiguous, the reduction dimension) is stored as two arrays:
//
//   uint32_t packed[rows][K / 8]
//     element k of a row lives in word k / 8 at bits [4 * (k % 8), 4 * (k % 8) + 4), as the
//     unsigned nibble q + 8 where q in [-8, 7] (so nibble 0 is -8 and nibble 8 is 0).
//     A 16-byte load (uint4) covers 32 consecutive elements.
//
//   bf16 scales[rows][ceil(K / 128)]
//     one scale per row and group of 128 consecutive k; the last group is partial when K is
//     not a multiple of 128 (hidden 2880 = 22 full groups + one of 64).
//
//   W[r][k] = q(r, k) * scales[r][k / 128]   (exact in float: |q| <= 8, scale is bf16)
//
// K must be a multiple of 32, so a row is whole 16-byte vectors and a vector never straddles
// a group. The generator produces q and the scales directly from the counter (no float copy
// of the weights exists anywhere).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/moe/generator.hpp"

namespace moe::kernels {

constexpr int kInt4Group = 128;
constexpr int kInt4KMultiple = 32;

__host__ __device__ constexpr int int4_groups(int k) { return (k + kInt4Group - 1) / kInt4Group; }
constexpr std::size_t int4_packed_bytes(std::size_t rows, int k) { return rows * (k / 8) * 4; }
constexpr std::size_t int4_scale_bytes(std::size_t rows, int k) {
  return rows * int4_groups(k) * 2;
}

// The code q in [-8, 7] of element j (0..7) of a packed word.
__host__ __device__ __forceinline__ int int4_unpack(std::uint32_t word, int j) {
  return static_cast<int>((word >> (4 * j)) & 0xFu) - 8;
}
__host__ __device__ __forceinline__ std::uint32_t int4_nibble(int q) {
  return static_cast<std::uint32_t>(q + 8) & 0xFu;
}

// Generated q for element (row, k) of a [rows, K] tensor: the counter index is row * K + k,
// the same index the bf16 format uses for that element.
__host__ __device__ __forceinline__ int generated_q4(std::uint64_t key, std::uint64_t row, int k_len,
                                                      int k) {
  return hash_to_q4(element_hash(key, row * static_cast<std::uint64_t>(k_len) + k));
}
// Generated scale bits of (row, group): counter index row * groups + group.
__host__ __device__ __forceinline__ std::uint16_t generated_scale(std::uint64_t scale_key,
                                                                   std::uint64_t row, int k_len,
                                                                   int group, float base) {
  return generated_scale_bits(scale_key, row * int4_groups(k_len) + group, base);
}

// Host packing of a q matrix [rows][K] (values in [-8, 7]) into the layout above.
inline std::vector<std::uint32_t> int4_pack(const std::vector<int>& q, std::size_t rows, int k) {
  std::vector<std::uint32_t> packed(rows * (k / 8), 0u);
  for (std::size_t r = 0; r < rows; ++r)
    for (int c = 0; c < k; ++c)
      packed[r * (k / 8) + c / 8] |= int4_nibble(q[r * k + c]) << (4 * (c % 8));
  return packed;
}

inline std::vector<int> int4_unpack_all(const std::vector<std::uint32_t>& packed, std::size_t rows,
                                        int k) {
  std::vector<int> q(rows * k);
  for (std::size_t r = 0; r < rows; ++r)
    for (int c = 0; c < k; ++c) q[r * k + c] = int4_unpack(packed[r * (k / 8) + c / 8], c % 8);
  return q;
}

// Dequantised value of element (row, k) given the packed words and scale bits.
inline float int4_dequant(const std::uint32_t* packed, const std::uint16_t* scales, std::size_t row,
                          int k_len, int k) {
  const int q = int4_unpack(packed[row * (k_len / 8) + k / 8], k % 8);
  return static_cast<float>(q) *
         bf16_bits_to_float(scales[row * int4_groups(k_len) + k / kInt4Group]);
}

}  // namespace moe::kernels
