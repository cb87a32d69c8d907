#pragma once
// The warp of the mma expert GEMM (expert_gemm_mma.cu): mma.sync m16n8k16 (bf16 in, fp32
// accumulate) with 16 weight rows as A and a chunk of 8 tokens as B, so a chunk wastes no
// lane; kChunks chunks' accumulators a warp, so a unit's weights stream once for up to
// 8 kChunks tokens (a pass). Weights go from memory to registers (16-byte loads, evict-first)
// and straight into A fragments, nothing through shared memory; the ring of decode_walk.cuh
// keeps kPiecesInFlight pieces' loads in flight a lane.
//
// Unit: one tile of 16 weight rows (int4_mma_layout.hpp's tile_source_row): gate_up, gate rows
// 8j .. 8j + 7 and their up rows (h columns 8j .. 8j + 7), down, output rows 16j .. 16j + 15.
// Piece: a unit over one K segment (bf16: 64 k, int4: one 128-k scale group) for one pass.
// Lane 4n + c holds the accumulators of rows n and n + 8 for tokens 2c and 2c + 1 of each
// chunk, so gate_up's SwiGLU pairs a gate and its up in one lane.
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/decode_walk.cuh"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/expert_mma_fragments.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/mma_sync.cuh"
#include "kernels/moe/moe_types.hpp"

namespace moe::kernels::decode {

// L: where int4 codes sit. A lane's two vectors a group are the same 32 codes of its two rows
// in either layout: in the fragment layout each of the warp's two loads is 512 contiguous bytes;
// in the row layout (int4_format.hpp, what the decode kernels and the tensor-core tiles read)
// they are 16 rows' 64 bytes each, every row walked along K from piece to piece.
template <WeightFormat F, bool kGateUp, int kChunks, Int4Layout L = Int4Layout::mma_fragments>
struct ExpertMmaWarp : DecodeWalk {
  static constexpr bool kInt4 = F == WeightFormat::int4;
  static constexpr bool kRowLayout = kInt4 && L == Int4Layout::rows;
  static constexpr int kRowsOfUnit = int4_mma_layout::kTileRows;
  static constexpr int kPassTokens = 8 * kChunks;
  static constexpr int kBlocks = 2;                           // bf16: 32-k blocks a piece
  static constexpr int kSegmentK = kInt4 ? kInt4Group : 32 * kBlocks;
  static constexpr int kLoads = kInt4 ? 2 : 2 * kBlocks;      // 16-byte weight loads a lane a piece
  // 12 (int4) or 16 (bf16) loads a lane in flight; fewer with 4 chunks' accumulators, to stay
  // within the 128 registers of two blocks an SM.
  static constexpr int kPiecesInFlight = kInt4 ? (kChunks == 1 ? 6 : kChunks == 2 ? 4 : 3) : (kChunks >= 4 ? 3 : 4);
  static constexpr int kCols = kGateUp ? 8 : 16;              // outputs of a unit a token

  int vecs_per_row;  // 16-byte vectors of a weight row (bf16: 8 k, int4: 32 k)
  int paired;        // gate_up: I, the first up row; down: 0

  struct Slot {
    uint4 w[kLoads];
    std::uint32_t scales;  // int4: this group's scales of rows n and n + 8
  };
  using Acc = float[kChunks][4];

  __device__ ExpertMmaWarp(const DecodeParams& params, const BlockTables& t, int lane_, int stride_)
      : DecodeWalk(params, t, lane_, stride_, (params.k_len + kSegmentK - 1) / kSegmentK),
        vecs_per_row(params.k_len / (kInt4 ? 32 : 8)),
        paired(kGateUp ? params.out_rows : 0) {}

  // Vector (half, n, c) of tile t, group g (int4_mma_layout.hpp) in the layout L.
  __device__ std::size_t int4_vector_index(int t, int g, int half, int n, int c) const {
    if constexpr (kRowLayout) return int4_mma_layout::row_layout_vector_index(p.k_len, t, g, half, n, c, paired);
    return int4_mma_layout::vector_index(p.k_len, t, g, half, n, c);
  }

  __device__ void issue(Slot& s, const PieceCursor& c) const {
    const Entry& e = tables.entries[c.entry];
    const int tile = c.pair_row, seg = c.segment(), n = lane >> 2, q = lane & 3, k_len = p.k_len;
    if constexpr (kInt4) {
      // A partial last group has fewer vectors a row; lanes past them load nothing (their codes
      // meet zero activations in consume).
      if (q < int4_mma_layout::group_quads(k_len, seg)) {
        s.w[0] = __ldcs(e.weights + int4_vector_index(tile, seg, 0, n, q));
        s.w[1] = __ldcs(e.weights + int4_vector_index(tile, seg, 1, n, q));
      } else {
        s.w[0] = s.w[1] = make_uint4(0u, 0u, 0u, 0u);
      }
      if constexpr (kRowLayout) {  // the pair (row n low, row n + 8 high), as the fragment layout holds it
        using int4_mma_layout::row_layout_scale_index;
        s.scales = static_cast<std::uint32_t>(__ldg(e.scales + row_layout_scale_index(k_len, tile, seg, n, paired))) |
                   static_cast<std::uint32_t>(__ldg(e.scales + row_layout_scale_index(k_len, tile, seg, n + 8, paired))) << 16;
      } else {
        s.scales = __ldg(reinterpret_cast<const std::uint32_t*>(e.scales) + int4_mma_layout::scale_pair_index(k_len, tile, seg, n));
      }
    } else {
      const std::size_t r0 = int4_mma_layout::tile_source_row(tile, n, paired);
      const std::size_t r1 = int4_mma_layout::tile_source_row(tile, n + 8, paired);
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        const int block = seg * kBlocks + b;
        if (block * 32 >= k_len) break;  // the K tail: the same for the whole warp
        const int v = expert_mma::bf16_lane_k(block, q) / 8;
        s.w[2 * b] = __ldcs(e.weights + r0 * vecs_per_row + v);
        s.w[2 * b + 1] = __ldcs(e.weights + r1 * vecs_per_row + v);
      }
    }
  }

  // 8 activations of the lane's token of chunk `ch` at k, zero past the pass's tokens.
  __device__ void load_x(std::uint32_t (&x)[4], const Entry& e, int t0, int tn, int ch, int k) const {
    const int tok = ch * 8 + (lane >> 2);
    if (tok >= tn) {
      x[0] = x[1] = x[2] = x[3] = 0u;
      return;
    }
    const uint4* row = reinterpret_cast<const uint4*>(p.input + static_cast<std::size_t>(input_row<kGateUp>(e, t0 + tok)) * p.k_len);
    copy_words(x, detail::load_activation<kGateUp>(row + k / 8));
  }

  __device__ void consume(const Slot& s, const PieceCursor& c, Acc& acc) const {
    const Entry& e = tables.entries[c.entry];
    const int seg = c.segment(), q = lane & 3;
    const int t0 = c.chunk() * kPassTokens, tn = min(kPassTokens, e.pairs - t0);
    if (seg == 0) {
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) acc[ch][0] = acc[ch][1] = acc[ch][2] = acc[ch][3] = 0.f;
    }
    if constexpr (kInt4) {
      const int quads = int4_mma_layout::group_quads(p.k_len, seg);
      std::uint32_t rn[4], rn8[4];
      copy_words(rn, s.w[0]);
      copy_words(rn8, s.w[1]);
      int4_group_mma<kChunks>(acc, rn, rn8, s.scales, (tn + 7) / 8, [&](std::uint32_t(&x)[4], int ch, int w) {
        if (q < quads)
          load_x(x, e, t0, tn, ch, expert_mma::int4_lane_x_k(seg, q, w));
        else
          x[0] = x[1] = x[2] = x[3] = 0u;
      });
    } else {
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        const int block = seg * kBlocks + b;
        if (block * 32 >= p.k_len) break;
        std::uint32_t rn[4], rn8[4];
        copy_words(rn, s.w[2 * b]);
        copy_words(rn8, s.w[2 * b + 1]);
#pragma unroll
        for (int ch = 0; ch < kChunks; ++ch) {
          if (ch * 8 >= tn) break;
          std::uint32_t x[4];
          load_x(x, e, t0, tn, ch, expert_mma::bf16_lane_k(block, q));
          mma_16816(acc[ch], expert_mma::bf16_a(rn, rn8, 0), expert_mma::bf16_b(x, 0));
          mma_16816(acc[ch], expert_mma::bf16_a(rn, rn8, 1), expert_mma::bf16_b(x, 1));
        }
      }
    }
    if (seg + 1 < segments) return;
    store(acc, e, c.pair_row, t0, tn);
  }

  // The epilogue: value i of a chunk is tile row c_row(lane, i), token c_col(lane, i).
  __device__ void store(const Acc& acc, const Entry& e, int tile, int t0, int tn) const {
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int tok = ch * 8 + expert_mma::c_col(lane, i);
        if (tok >= tn) continue;
        const std::size_t pos = static_cast<std::size_t>(e.first_pair + t0 + tok);
        const int row = expert_mma::c_row(lane, i);  // rows n; value i + 2 is row n + 8
        if constexpr (kGateUp) {
          reinterpret_cast<std::uint16_t*>(p.h_out)[pos * p.out_rows + int4_mma_layout::tile_source_row(tile, row, paired)] =
              detail::to_bf16_bits(detail::silu(acc[ch][i]) * acc[ch][i + 2]);
        } else {
          float* out = p.down_out + pos * p.out_rows;
          out[int4_mma_layout::tile_source_row(tile, row, 0)] = acc[ch][i];
          out[int4_mma_layout::tile_source_row(tile, row + 8, 0)] = acc[ch][i + 2];
        }
      }
  }
};

}  // namespace moe::kernels::decode
