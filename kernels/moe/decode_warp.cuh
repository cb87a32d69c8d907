#pragma once
// The SIMT decode warp (both formats): a piece is a unit's rows over one K segment for one
// chunk of kTokens tokens, multiplied with fp32 FMAs (int4 codes converted to fp32 first).
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/decode_walk.cuh"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/int4_format.hpp"

namespace moe::kernels::decode {

template <WeightFormat F>
struct DecodeTraits;
template <>
struct DecodeTraits<WeightFormat::bf16> {
  static constexpr int kElemsPerVec = 8;   // bf16 per 16-byte load
};
template <>
struct DecodeTraits<WeightFormat::int4> {
  static constexpr int kElemsPerVec = 32;  // int4 codes per 16-byte load
};

// Piece shapes: rows of a unit (kRows), 16-byte loads per lane per row (kVecs) and pieces in
// flight per warp (kDepth), bounded by 128 registers a thread (two blocks of 8 warps per SM).
// Measured on an H200 (deepseek-v2-lite M=1): 4 vectors x 2 deep beat 2 x 3 for bf16, and
// 2 x 3 beat 1 x 4 for int4 (gate_up 111 against 122 us then): per-piece overhead matters more
// than one piece in flight. A unit is 2 rows (gate_up: a gate row and its up row), except down
// at one token a pass: 4 output rows with half the vectors a row, so rows of I = 1408 (176
// vectors) fill 92% of their segments instead of 69% (more rows spill registers once several
// tokens share a pass).
template <WeightFormat F, bool kGateUp, int kTokens>
struct PieceShape {
  static constexpr bool kFourRows = !kGateUp && kTokens == 1;
  static constexpr int kRows = kFourRows ? 4 : 2;
  static constexpr int kVecs = (F == WeightFormat::bf16 ? 4 : 2) / (kFourRows ? 2 : 1);
  static constexpr int kDepth = F == WeightFormat::bf16 ? 2 : 3;
};

// float(q) for nibble n = q + 8: exact, two integer ops and one add.
__device__ __forceinline__ float nibble_to_float(std::uint32_t word, int j) {
  return __uint_as_float(0x4B000000u | ((word >> (4 * j)) & 0xFu)) - 8388616.0f;
}

// kTokens: tokens sharing one pass over a unit's weights, a compile-time bound picked from M
// at launch (1, 2, 4 or 8): the consume loop is unrolled over it, and unrolled for 8 at M=1
// the kernel outgrew the instruction cache (ncu: 'no instruction' was its top stall).
template <WeightFormat F, bool kGateUp, int kRows, int kVecs, int kDepth, int kTokens>
struct DecodeWarp : DecodeWalk {
  using T = DecodeTraits<F>;
  static constexpr int kSegVecs = kVecs * 32;  // vectors of a row per segment

  static constexpr int kPassTokens = kTokens;
  static constexpr int kRowsOfUnit = kRows;
  static constexpr int kPiecesInFlight = kDepth;

  int vecs_per_row;
  int groups;  // int4 scale groups per row

  __device__ DecodeWarp(const DecodeParams& params, const BlockTables& t, int lane_, int stride_)
      : DecodeWalk(params, t, lane_, stride_,
                   (params.k_len / T::kElemsPerVec + kSegVecs - 1) / kSegVecs),  // K segments of a row
        vecs_per_row(params.k_len / T::kElemsPerVec),
        groups(int4_groups(params.k_len)) {}

  static constexpr int kCols = kGateUp ? kRows / 2 : kRows;  // outputs of a unit per token

  // down at one token a pass (bf16) loads a piece's activations with its weights: each unit is
  // another expert's h row, so unlike gate_up's x (one row, always in L1) they are often L2
  // misses of L1, and loaded in consume they put an L2 round trip in every piece's chain.
  static constexpr bool kInputInSlot = !kGateUp && kTokens == 1 && F == WeightFormat::bf16;

  // Ring slot: the weights of one piece (kRows rows), for int4 their scales, and with
  // kInputInSlot the activation vectors they multiply.
  struct Slot {
    uint4 w[kRows][kVecs];
    std::uint16_t scale_bits[kRows][kVecs];  // int4: bf16 bits, converted when consumed
    uint4 x[kInputInSlot ? kVecs : 1];
  };

  // Weight row r of unit j: gate_up's rows are kCols gate rows then the matching up rows.
  __device__ int rows_of(int j, int r) const {
    if constexpr (kGateUp) return r < kCols ? j * kCols + r : p.out_rows + j * kCols + (r - kCols);
    return j * kCols + r;  // down: kCols == kRows output rows
  }

  __device__ void issue(Slot& s, const PieceCursor& c) const {
    const Entry& e = tables.entries[c.entry];
    const int j = c.pair_row;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::size_t row = static_cast<std::size_t>(rows_of(j, r));
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        // Past the row's end a lane loads the last vector again (consume counts it as zero):
        // a load whose result nothing selects on is not waited for until consume, whereas
        // `ok ? load : 0` makes the warp wait for the load right here.
        const int v = min(c.segment() * kSegVecs + lane + 32 * i, vecs_per_row - 1);
        // Weights are read once per step: stream them past L1 and L2 (evict-first).
        s.w[r][i] = __ldcs(e.weights + row * vecs_per_row + v);
        if constexpr (F == WeightFormat::int4)
          s.scale_bits[r][i] = __ldg(e.scales + row * groups + v * 32 / kInt4Group);
      }
    }
    if constexpr (kInputInSlot) {
      const uint4* in = input_vecs(input_row<kGateUp>(e, c.chunk()));
#pragma unroll
      for (int i = 0; i < kVecs; ++i)
        s.x[i] = detail::load_activation<kGateUp>(in + min(c.segment() * kSegVecs + lane + 32 * i, vecs_per_row - 1));
    }
  }

  __device__ const uint4* input_vecs(int row) const {
    return reinterpret_cast<const uint4*>(p.input + static_cast<std::size_t>(row) * p.k_len);
  }

  // Multiplies a piece into the accumulators; at the last segment writes the chunk's outputs.
  __device__ void consume(const Slot& s, const PieceCursor& c, float (&acc)[kRows][kTokens]) const {
    const Entry& e = tables.entries[c.entry];
    const int t0 = c.chunk() * kTokens;
    const int tn = min(kTokens, e.pairs - t0);
    if (c.segment() == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < kTokens; ++t) acc[r][t] = 0.f;
    }
    int rows[kTokens];
#pragma unroll
    for (int t = 0; t < kTokens; ++t)  // one token a pass (M=1): gate_up keeps no token table, x row 0
      rows[t] = (kGateUp && kTokens == 1) || t >= tn ? 0 : input_row<kGateUp>(e, t0 + t);
    // No branch on the row's end inside the loop (so the compiler can hoist every activation
    // load ahead of the math): past the end a lane reads the last vector again and its weights
    // count as zero.
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int v_at = c.segment() * kSegVecs + lane + 32 * i;
      const bool ok = v_at < vecs_per_row;
      const int v = min(v_at, vecs_per_row - 1);
      {
        if constexpr (F == WeightFormat::bf16) {
          float wf[kRows][8];
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const std::uint32_t a[4] = {s.w[r][i].x, s.w[r][i].y, s.w[r][i].z, s.w[r][i].w};
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              wf[r][2 * q] = ok ? detail::bf16_lo(a[q]) : 0.f;
              wf[r][2 * q + 1] = ok ? detail::bf16_hi(a[q]) : 0.f;
            }
          }
#pragma unroll
          for (int t = 0; t < kTokens; ++t) {
            if (t == 0 || t < tn) {
              uint4 xv;
              if constexpr (kInputInSlot) xv = s.x[i];
              else xv = detail::load_activation<kGateUp>(input_vecs(rows[t]) + v);
              const std::uint32_t xw[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const float lo = detail::bf16_lo(xw[q]), hi = detail::bf16_hi(xw[q]);
#pragma unroll
                for (int r = 0; r < kRows; ++r) {
                  acc[r][t] = fmaf(wf[r][2 * q], lo, acc[r][t]);
                  acc[r][t] = fmaf(wf[r][2 * q + 1], hi, acc[r][t]);
                }
              }
            }
          }
        } else {
          // Dequantise a row's codes a word (8 codes) at a time and use them for every token
          // of the chunk; the 32-code dot of a token is summed before its scale is applied.
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const float scale = ok ? __bfloat162float(__ushort_as_bfloat16(s.scale_bits[r][i])) : 0.f;
            float sum[kTokens];
#pragma unroll
            for (int t = 0; t < kTokens; ++t) sum[t] = 0.f;
            const std::uint32_t words[4] = {s.w[r][i].x, s.w[r][i].y, s.w[r][i].z, s.w[r][i].w};
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              float qf[8];
#pragma unroll
              for (int j = 0; j < 8; ++j) qf[j] = nibble_to_float(words[q], j);
#pragma unroll
              for (int t = 0; t < kTokens; ++t) {
                if (t == 0 || t < tn) {
                  const uint4 x4 = detail::load_activation<kGateUp>(input_vecs(rows[t]) + 4 * v + q);  // 32 per vector
                  const std::uint32_t xw[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
                  for (int h = 0; h < 4; ++h) {
                    sum[t] = fmaf(qf[2 * h], detail::bf16_lo(xw[h]), sum[t]);
                    sum[t] = fmaf(qf[2 * h + 1], detail::bf16_hi(xw[h]), sum[t]);
                  }
                }
              }
            }
#pragma unroll
            for (int t = 0; t < kTokens; ++t)
              if (t == 0 || t < tn) acc[r][t] = fmaf(sum[t], scale, acc[r][t]);
          }
        }
      }
    }
    if (c.segment() + 1 < segments) return;
    // Epilogue: butterfly sums (fixed order, every lane ends with the total); lane t writes
    // token t of the chunk.
    const int j = c.pair_row;
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < tn) {
        float sum[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) sum[r] = detail::warp_sum(acc[r][t]);
        if (lane == t) {
          const std::size_t pos = static_cast<std::size_t>(e.first_pair + t0 + t);
          if constexpr (kGateUp) {
#pragma unroll
            for (int col = 0; col < kCols; ++col)
              reinterpret_cast<std::uint16_t*>(p.h_out)[pos * p.out_rows + j * kCols + col] =
                  detail::to_bf16_bits(detail::silu(sum[col]) * sum[kCols + col]);
          } else {
            float* out = p.down_out + pos * p.out_rows + j * kRows;
#pragma unroll
            for (int r = 0; r < kRows; ++r) out[r] = sum[r];
          }
        }
      }
    }
  }

  using Acc = float[kRows][kTokens];
};

}  // namespace moe::kernels::decode
