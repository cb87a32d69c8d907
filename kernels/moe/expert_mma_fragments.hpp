#pragma once
// How the mma expert GEMM (expert_mma_warp.cuh) feeds mma.m16n8k16 (bf16 in, fp32 accumulate):
// weights are the 16-row A operand, up to 8 tokens the n = 8 B operand, so a chunk of 8 tokens
// wastes no lane of the tensor core. Host and device share every function here; the CPU test
// (tests/cpu/test_expert_mma_emulation.cpp) runs them for the 32 lanes of one warp.
//
// PTX ISA fragment layouts of m16n8k16 with bf16 operands, lane T = 4 n + c (n = T / 4 the
// group, c = T % 4 the quad):
//   A (16 x 16, row major), 4 registers of two bf16: register r holds row n + 8 (r & 1),
//     k 2c + 8 (r >> 1) + e in its half e (e = 0: low).
//   B (16 x 8, column major), 2 registers: register r holds column n, k 2c + 8 r + e.
//   C, D (16 x 8 fp32), 4 floats: value i is row n + 8 (i >> 1), column 2c + (i & 1).
//
// A dot product does not care in which order k is summed, so the 16 logical k of an mma step
// are mapped to global k to suit what a lane loads; A and B use the same map, lane by lane
// (both depend on the quad c only), so they agree element by element:
//   bf16: a lane loads 8 consecutive k (16 bytes) of its rows and of its token per 32-k block,
//     k 8c .. 8c + 7; step s (0, 1) takes logical k 2c + 8r + e <-> global 8c + 4s + 2r + e: its
//     registers are word 2s + r of the loads, unchanged.
//   int4: a lane loads 32 consecutive codes (16 bytes) of each of its rows per 128-k group,
//     k 32c .. 32c + 31 (int4_mma_layout.hpp); step s (0..7) takes the map of
//     int4_mma_fragments.hpp (nibble pairs (j, j + 4) of word s / 2), so each register is one
//     mask-and-or of a word (128 + nibble as bf16, 0x4300 | nibble) and one bf16x2 subtraction
//     of 136, about 1.5 instructions a code, done once for every token chunk of the pass.
//   int4, stream tiles (int4_stream_layout.hpp, codes interleaved in each word): step s takes
//     logical k 2c + 8r + e <-> global 32c + 4s + 2r + e, so register r of B is word 2s + r of
//     the lane's 32 activations as loaded, and register r of A is pair pair_of(s, r) of code
//     word s / 2, as above.
#include <cstdint>

#include "kernels/moe/bf16.hpp"
#include "kernels/moe/int4_mma_fragments.hpp"
#include "kernels/moe/host_device.hpp"

namespace moe::kernels::expert_mma {

// ---- The PTX layouts (for the CPU emulation of the tensor core and the epilogue) ----
MOE_HD int a_row(int lane, int r) { return lane / 4 + 8 * (r & 1); }
MOE_HD int a_k(int lane, int r, int e) { return 2 * (lane % 4) + 8 * (r >> 1) + e; }
MOE_HD int b_col(int lane) { return lane / 4; }
MOE_HD int b_k(int lane, int r, int e) { return 2 * (lane % 4) + 8 * r + e; }
MOE_HD int c_row(int lane, int i) { return lane / 4 + 8 * (i >> 1); }
MOE_HD int c_col(int lane, int i) { return 2 * (lane % 4) + (i & 1); }

// ---- The logical-to-global k maps ----
// bf16: global k within the 32-k block of logical element (r, e) of step s for quad c.
MOE_HD int bf16_block_k(int c, int s, int r, int e) { return 8 * c + 4 * s + 2 * r + e; }
// int4: global k within the 128-k group of logical element (r, e) of step s for quad c.
MOE_HD int int4_group_k(int c, int s, int r, int e) { return 32 * c + int4_mma::k_of(s, 2 * r + e); }
MOE_HD int int4_stream_group_k(int c, int s, int r, int e) { return 32 * c + 4 * s + 2 * r + e; }

// The first k of what lane quad c loads (8 elements of a row or of a token): bf16, in 32-k
// block `block`; int4 activations, word w (0..3) of its 32 k in 128-k group g.
MOE_HD int bf16_lane_k(int block, int c) { return 32 * block + 8 * c; }
MOE_HD int int4_lane_x_k(int g, int c, int w) { return 128 * g + 32 * c + 8 * w; }

struct AFragment {
  std::uint32_t r[4];
};
struct BFragment {
  std::uint32_t r[2];
};

// bf16 A of step s (0, 1) from a lane's loads of its row n and row n + 8 (8 bf16 each).
MOE_HD AFragment bf16_a(const std::uint32_t (&row_n)[4], const std::uint32_t (&row_n8)[4], int s) {
  return {{row_n[2 * s], row_n8[2 * s], row_n[2 * s + 1], row_n8[2 * s + 1]}};
}
// bf16 B of step s from a lane's load of its token's 8 activations.
MOE_HD BFragment bf16_b(const std::uint32_t (&x)[4], int s) { return {{x[2 * s], x[2 * s + 1]}}; }

// Nibble pair j (nibbles j and j + 4) of a packed word as two bf16 codes q = nibble - 8: the
// magic-number conversion (0x4300 | nibble is 128 + nibble) and one bf16x2 subtraction of 136,
// exact both ways.
MOE_HD std::uint32_t dequant_pair(std::uint32_t word, int j) {
  const std::uint32_t biased = int4_mma::weight_pair_biased(word, j);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint32_t out;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(out) : "r"(biased), "r"(0x3F803F80u), "r"(0xC308C308u));
  return out;
#else
  const auto half = [](std::uint32_t b) {
    return static_cast<std::uint32_t>(float_to_bf16_bits(bf16_bits_to_float(static_cast<std::uint16_t>(b)) - 136.f));
  };
  return half(biased & 0xFFFFu) | (half(biased >> 16) << 16);
#endif
}

// int4 A of step s (0..7) from a lane's two vectors of 32 codes (rows n and n + 8).
MOE_HD AFragment int4_a(const std::uint32_t (&row_n)[4], const std::uint32_t (&row_n8)[4], int s) {
  const int w = s / 2, j0 = int4_mma::pair_of(s, 0), j1 = int4_mma::pair_of(s, 1);
  return {{dequant_pair(row_n[w], j0), dequant_pair(row_n8[w], j0), dequant_pair(row_n[w], j1),
           dequant_pair(row_n8[w], j1)}};
}
// int4 B of step s from the lane's 8 activations at k 32c + 8 (s / 2) .. + 7 of its token.
MOE_HD BFragment int4_b(const std::uint32_t (&x)[4], int s) {
  return {{int4_mma::activation_pair(x, int4_mma::pair_of(s, 0)), int4_mma::activation_pair(x, int4_mma::pair_of(s, 1))}};
}

// int4 B of step s in the stream tiles (A: int4_a of their words) from the lane's 8
// activations at k 32c + 8 (s / 2) .. + 7: two of its words as loaded.
MOE_HD BFragment int4_stream_b(const std::uint32_t (&x)[4], int s) { return {{x[2 * (s % 2)], x[2 * (s % 2) + 1]}}; }

}  // namespace moe::kernels::expert_mma
