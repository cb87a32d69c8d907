#pragma once
// How the int4 decode warp on tensor cores (int4_mma_warp.cuh) feeds
// mma.m16n8k16 (bf16 in, fp32 accumulate) straight from the packed codes, with no shuffle.
//
// The tile: A = activations (16 token rows x 16 k; rows 0..7 are a chunk's tokens, 8..15
// zero), B = weights (16 k x 8 columns, column n = one weight row), C = 16 x 8 fp32. Lane T of
// the warp holds A row T / 4, B column T / 4 and C row T / 4 (columns 2 (T % 4) and +1); its
// quad c = T % 4 picks the k it holds: A/B elements at logical k 2c, 2c + 1 (one 32-bit
// register of two bf16) and 2c + 8, 2c + 9 (another).
//
// A dot product does not care in which order k is summed, so logical k is mapped to global k
// to suit the packing (int4_format.hpp: element k in word k / 8, nibble k % 8): lane T loads
// 32 consecutive k of its row, k0 = group * 128 + c * 32 (one 16-byte vector, four words), and
// the 8 mma steps of a 128-k group take, in step s = 2 i + h (word i, half h):
//
//   logical 2c + e      <-> global k0 + 8 i + 2 h + 4 e        (e = 0, 1)
//   logical 2c + 8 + e  <-> global k0 + 8 i + 2 h + 1 + 4 e
//
// so both registers of a step are nibble pairs (j, j + 4) of one word: one AND/OR each
// (weight_pair), and the activation pairs (x_j, x_{j + 4}) are one byte permute of two words
// (activation_pair). Every lane maps the same way, so A and B agree element by element.
#include <cstdint>

#include "kernels/moe/host_device.hpp"

namespace moe::kernels::int4_mma {

// Nibbles j and j + 4 (j = 0..3) of a packed word as two bf16 holding 128 + nibble (exact:
// 0x4300 is 128.0 and a 7-bit mantissa holds the nibble), low half nibble j. Subtracting 136
// (bf16 0x4308) gives the codes q = nibble - 8 exactly.
MOE_HD std::uint32_t weight_pair_biased(std::uint32_t word, int j) {
  const std::uint32_t shifted = word >> (4 * j);
#if defined(__CUDA_ARCH__)
  // One LOP3, (a & b) | c: written in C the compiler emits an AND and an OR.
  std::uint32_t out;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(out) : "r"(shifted), "n"(0x000F000Fu), "n"(0x43004300u));
  return out;
#else
  return (shifted & 0x000F000Fu) | 0x43004300u;
#endif
}
constexpr std::uint32_t kBias136Pair = 0x43084308u;  // bf16 136.0 in both halves

// Activations x_j and x_{j + 4} (j = 0..3) of 8 consecutive bf16 held as four words
// w0 = (x0, x1), w1 = (x2, x3), w2 = (x4, x5), w3 = (x6, x7): low half x_j.
MOE_HD std::uint32_t activation_pair(const std::uint32_t (&w)[4], int j) {
  const std::uint32_t lo = w[j / 2], hi = w[2 + j / 2];
  return (j & 1) ? ((lo >> 16) | (hi & 0xFFFF0000u)) : ((lo & 0xFFFFu) | (hi << 16));
}

// The global k (within the lane's 32) of logical element e (0..3: k 2c, 2c + 1, 2c + 8,
// 2c + 9) in step s (0..7). For the CPU test of the mapping.
constexpr int k_of(int step, int e) { return 8 * (step / 2) + 2 * (step % 2) + (e >= 2 ? 1 : 0) + 4 * (e & 1); }

// Which pair (j) of word step / 2 step s takes in register r (0: logical 2c, 2c + 1; 1: 2c + 8, 2c + 9).
constexpr int pair_of(int step, int r) { return 2 * (step % 2) + r; }

}  // namespace moe::kernels::int4_mma
