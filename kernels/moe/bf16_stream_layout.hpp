#pragma once
// The bf16 weight layout of the stream expert GEMM (expert_gemm_stream.cu): the same values as
// the row layout ([rows, K] row major), re-laid at generation time so that each stage the
// family streams (16 tile rows x up to 256 k, stream_plan.hpp) is one contiguous run of bytes,
// already in the order its consumer warp's lanes read it. A stage is then one bulk copy (in
// rows it is 16 copies of at most 512 bytes, and small copies hold the copy engine far below
// the memory's rate), and the warp's 16-byte reads of the slot are free of bank conflicts.
//
// Tiles. As int4_mma_layout.hpp: tile t of 16 rows, tile row i from source row
// int4_mma_layout::tile_source_row(t, i, paired) (gate_up pairs gate rows with their up rows).
// Tile t is one contiguous block of 16 * K bf16; within it segment s (k 256 s ..) starts at
// element 16 * 256 * s and holds its blocks of 32 k, b = 0 .. len / 32 - 1, each 1 KB:
//
//   vector (b, half, lane) at index  (2 b + half) * 32 + lane     (16 bytes, 8 bf16)
//     = k 256 s + 32 b + 8 c .. + 7 of tile row n + 8 half, lane = 4 n + c
//
// so a warp's load of rows n (half 0) or n + 8 (half 1) of a block is 512 contiguous bytes,
// the registers expert_mma_fragments.hpp's bf16_a takes. K must be a multiple of 32 and rows
// of 16.
#include <cstddef>
#include <cstdint>

#include "kernels/moe/host_device.hpp"
#include "kernels/moe/int4_mma_layout.hpp"

namespace moe::kernels::bf16_stream_layout {

constexpr int kTileRows = int4_mma_layout::kTileRows;
constexpr int kSegmentK = 256;   // k of a full stage
constexpr int kBlockK = 32;      // k of one mma block (two k16 steps)
constexpr int kVectorElems = 8;  // bf16 a 16-byte vector

// Element index of the first of vector (b, half, lane) of segment s of tile t.
MOE_HD std::size_t vector_element(int k_len, int t, int s, int b, int half, int lane) {
  const std::size_t tile = static_cast<std::size_t>(t) * kTileRows * k_len;
  return tile + static_cast<std::size_t>(kTileRows) * kSegmentK * s + ((2 * b + half) * 32 + lane) * kVectorElems;
}

// Where (tile row i, k) of tile t lives: its element index.
MOE_HD std::size_t element_of(int k_len, int t, int i, int k) {
  const int s = k / kSegmentK, b = k % kSegmentK / kBlockK, c = k % kBlockK / kVectorElems;
  return vector_element(k_len, t, s, b, i >> 3, 4 * (i & 7) + c) + k % kVectorElems;
}

// The inverse, for the generator (one thread a vector): which source row and k (a multiple of 8:
// the vector's first) vector `v` of a [rows, K] tensor holds.
struct VectorSource {
  std::size_t row;
  int k0;
};
MOE_HD VectorSource vector_source(int k_len, std::size_t v, int paired) {
  const std::size_t tile_vectors = static_cast<std::size_t>(kTileRows) * k_len / kVectorElems;
  const int t = static_cast<int>(v / tile_vectors);
  const int in_tile = static_cast<int>(v % tile_vectors);
  constexpr int kSegmentVectors = kTileRows * kSegmentK / kVectorElems;  // 512
  const int s = in_tile / kSegmentVectors, in_segment = in_tile % kSegmentVectors;
  const int b = in_segment / 64, half = in_segment % 64 / 32, lane = in_segment % 32;
  return {static_cast<std::size_t>(int4_mma_layout::tile_source_row(t, 8 * half + lane / 4, paired)),
          kSegmentK * s + kBlockK * b + kVectorElems * (lane % 4)};
}

// Host conversions between the row layout and this one (same sizes), as bf16 bits.
inline void relay_to_tiles(const std::uint16_t* rows_data, std::size_t rows, int k_len, int paired,
                           std::uint16_t* tiles) {
  for (std::size_t t = 0; t < rows / kTileRows; ++t)
    for (int i = 0; i < kTileRows; ++i) {
      const std::size_t src = static_cast<std::size_t>(int4_mma_layout::tile_source_row(static_cast<int>(t), i, paired));
      for (int k = 0; k < k_len; ++k) tiles[element_of(k_len, static_cast<int>(t), i, k)] = rows_data[src * k_len + k];
    }
}

}  // namespace moe::kernels::bf16_stream_layout
