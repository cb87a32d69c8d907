#pragma once
// The int4 decode warp on tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate).
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/decode_walk.cuh"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_fragments.hpp"

namespace moe::kernels::decode {

// A unit is 8 weight rows (gate_up: gate and up rows of 4 h columns, interleaved; down: 8
// output rows), a piece one 128-k scale group of a unit for a chunk of up to 8 tokens. Each
// lane loads one 16-byte vector (32 codes) of weight row lane / 4 a piece, and the warp runs
// the group's 8 mma.m16n8k16 steps with the codes as B and the chunk's activations as A,
// mapped as int4_mma_fragments.hpp says (no shuffle, no float conversion per code: an AND/OR
// and one bf16x2 subtraction per two codes), then scales the group's sums. The SIMT warp
// spends about 5 instructions a code, this one about 1.5; int4_decode_on_tensor_cores()
// picks it (from M=2: deepseek-v2-lite int4 M=4 886 us an 8-layer step, against 1812 on the
// tensor-core tiles, H200).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], std::uint32_t a0, std::uint32_t a2, std::uint32_t b0,
                                               std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
#else
  (void)d, (void)a0, (void)a2, (void)b0, (void)b1;
  __trap();
#endif
}

// 128 + nibble pairs to the codes q = nibble - 8: x * 1 - 136 in bf16x2, exact.
__device__ __forceinline__ std::uint32_t unbias_pair(std::uint32_t biased) {
  std::uint32_t out;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(out) : "r"(biased), "r"(0x3F803F80u), "r"(0xC308C308u));
#else
  out = biased;
#endif
  return out;
}

template <bool kGateUp>
struct Int4MmaWarp : DecodeWalk {
  static constexpr int kRows = 8;    // weight rows of a unit (B columns)
  static constexpr int kChunk = 8;   // tokens of a pass (A rows 0..7)
  static constexpr int kDepth = 6;   // pieces in flight a warp: 6 x 512 bytes
  static constexpr int kPassTokens = kChunk;
  static constexpr int kRowsOfUnit = kRows;
  static constexpr int kPiecesInFlight = kDepth;

  static constexpr int kCols = kGateUp ? kRows / 2 : kRows;  // outputs of a unit per token

  int vecs_per_row;  // 16-byte vectors (32 codes) of a row; segments: its 128-k scale groups

  struct Slot {
    uint4 w;                      // 32 codes of weight row lane / 4
    std::uint16_t scale_bits[2];  // this group's scales of the lane's output rows 2c, 2c + 1
  };

  __device__ Int4MmaWarp(const DecodeParams& params, const BlockTables& t, int lane_, int stride_)
      : DecodeWalk(params, t, lane_, stride_, int4_groups(params.k_len)), vecs_per_row(params.k_len / 32) {}

  // Weight row of B column n (0..7) of unit j. gate_up: gate row 4j + n / 2 (n even), up row
  // I + 4j + n / 2 (n odd), so a lane's two C columns (2c, 2c + 1) are the gate and up of one
  // h column; down: output row 8j + n.
  __device__ int row_of(int j, int n) const {
    if constexpr (kGateUp) return (n & 1 ? p.out_rows : 0) + 4 * j + n / 2;
    return 8 * j + n;
  }
  __device__ void issue(Slot& s, const PieceCursor& c) const {
    const Entry& e = tables.entries[c.entry];
    const int j = c.pair_row, g = c.segment(), quad = lane & 3;
    // Past a partial last group's end a lane loads its row's last vector again; consume
    // multiplies it by zero activations.
    const int v = min(4 * g + quad, vecs_per_row - 1);
    s.w = __ldcs(e.weights + static_cast<std::size_t>(row_of(j, lane >> 2)) * vecs_per_row + v);
    s.scale_bits[0] = __ldg(e.scales + static_cast<std::size_t>(row_of(j, 2 * quad)) * segments + g);
    s.scale_bits[1] = __ldg(e.scales + static_cast<std::size_t>(row_of(j, 2 * quad + 1)) * segments + g);
  }

  __device__ void consume(const Slot& s, const PieceCursor& c, float (&acc)[2]) const {
    const Entry& e = tables.entries[c.entry];
    const int g = c.segment(), quad = lane & 3, n = lane >> 2;
    const int t0 = c.chunk() * kChunk, tn = min(kChunk, e.pairs - t0);
    if (g == 0) acc[0] = acc[1] = 0.f;
    // A: this lane's token (chunk row n) over the same 32 k as its codes; zero past the chunk
    // or the row.
    uint4 x[4] = {};
    if (n < tn && 4 * g + quad < vecs_per_row) {
      const uint4* in = reinterpret_cast<const uint4*>(p.input + static_cast<std::size_t>(input_row<kGateUp>(e, t0 + n)) * p.k_len) +
                        (4 * g + quad) * 4;
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = detail::load_activation<kGateUp>(in + i);
    }
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    const std::uint32_t words[4] = {s.w.x, s.w.y, s.w.z, s.w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t xw[4] = {x[i].x, x[i].y, x[i].z, x[i].w};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::uint32_t b0 = unbias_pair(int4_mma::weight_pair_biased(words[i], int4_mma::pair_of(2 * i + h, 0)));
        const std::uint32_t b1 = unbias_pair(int4_mma::weight_pair_biased(words[i], int4_mma::pair_of(2 * i + h, 1)));
        mma_bf16_16816(d, int4_mma::activation_pair(xw, int4_mma::pair_of(2 * i + h, 0)),
                       int4_mma::activation_pair(xw, int4_mma::pair_of(2 * i + h, 1)), b0, b1);
      }
    }
    acc[0] = fmaf(d[0], __bfloat162float(__ushort_as_bfloat16(s.scale_bits[0])), acc[0]);
    acc[1] = fmaf(d[1], __bfloat162float(__ushort_as_bfloat16(s.scale_bits[1])), acc[1]);
    if (g + 1 < segments || n >= tn) return;
    // Lane (n, c) holds token n's outputs of B columns 2c and 2c + 1.
    const std::size_t pos = static_cast<std::size_t>(e.first_pair + t0 + n);
    const int j = c.pair_row;
    if constexpr (kGateUp) {
      reinterpret_cast<std::uint16_t*>(p.h_out)[pos * p.out_rows + 4 * j + quad] =
          detail::to_bf16_bits(detail::silu(acc[0]) * acc[1]);
    } else {
      float* out = p.down_out + pos * p.out_rows + 8 * j + 2 * quad;
      out[0] = acc[0];
      out[1] = acc[1];
    }
  }

  using Acc = float[2];
};

}  // namespace moe::kernels::decode
