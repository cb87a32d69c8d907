#pragma once
// The int4 weight layout of the mma expert GEMM (expert_mma_warp.cuh): the codes and scales of
// int4_format.hpp (same values, same group of 128 along K, same byte counts) re-laid at
// generation time into the order in which mma.m16n8k16's A fragments consume them, so each
// lane's 16-byte load is ready fragment data and nothing passes through shared memory.
//
// Tiles. A [rows, K] tensor is cut into tiles of 16 rows (rows % 16 == 0). Tile row i of tile t
// is source row tile_source_row(t, i, paired): without pairing (down) row 16 t + i; with
// pairing (gate_up, paired = I, the up half's first row) gate row 8 t + i for i < 8 and up row
// I + 8 t + (i - 8) for i >= 8, so one mma's accumulators hold a gate and its up output and
// SwiGLU happens in the lane that holds them.
//
// Codes. Tile t is one contiguous block of 16 * K / 2 bytes; within it group g (k 128 g ..,
// quads(g) = min(128, K - 128 g) / 32 vectors of 32 codes a row: 4 except in a partial last
// group, hidden 2880: 22 groups of 4, one of 2) starts at byte 1024 g and holds
// 32 * quads(g) vectors of 16 bytes:
//
//   vector (half, n, c) at index  half * 8 * quads + n * quads + c      (c < quads)
//     = the 32 codes k = 128 g + 32 c .. + 31 of tile row n + 8 half, in int4_format.hpp's
//       word order (code k0 + 8 w + j in word w, nibble j, biased by 8).
//
// Lane T = 4 n + c of a warp loads vector (0, n, c) and (1, n, c): the first gives its A
// registers of rows n (a0, a2), the second of rows n + 8 (a1, a3), for the 8 mma steps of the
// group (expert_mma_fragments.hpp maps the steps' k). In a full group each of the two loads of
// the warp is 512 contiguous bytes.
//
// Scales. Tile t, group g: 16 bf16 at element (t * groups + g) * 16, ordered
// (row n, row n + 8) for n = 0..7: lane 4 n + c reads one 32-bit word, its two rows' scales.
//
// Both arrays have exactly the byte counts of int4_format.hpp (int4_packed_bytes,
// int4_scale_bytes); int4_relay_to_mma / int4_relay_from_mma convert between the two layouts
// (host, for tests and for the CPU side of the generator).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/host_device.hpp"

namespace moe::kernels::int4_mma_layout {

constexpr int kTileRows = 16;
constexpr int kVectorCodes = 32;

// Source row of tile row i (0..15) of tile t; paired: the first up row (gate_up: I), 0 for none.
MOE_HD int tile_source_row(int t, int i, int paired) {
  if (paired == 0) return kTileRows * t + i;
  return (i < 8 ? 0 : paired) + 8 * t + (i & 7);
}

// The tile and tile row (0..15) that hold source row `row`: tile_source_row's inverse.
struct TileRow {
  int tile;
  int row;
};
MOE_HD TileRow tile_row_of(int row, int paired) {
  if (paired == 0) return {row / kTileRows, row % kTileRows};
  const bool up = row >= paired;
  const int r = up ? row - paired : row;
  return {r / 8, r % 8 + (up ? 8 : 0)};
}

// Vectors of 32 codes a row in group g of a K-long row: 4, or fewer in a partial last group.
MOE_HD int group_quads(int k_len, int g) {
  const int left = k_len - kInt4Group * g;
  return (left < kInt4Group ? left : kInt4Group) / kVectorCodes;
}

// Index (in 16-byte vectors) of vector (half, n, c) of tile t, group g.
MOE_HD std::size_t vector_index(int k_len, int t, int g, int half, int n, int c) {
  const int quads = group_quads(k_len, g);
  const std::size_t tile = static_cast<std::size_t>(t) * kTileRows * (k_len / kVectorCodes);
  return tile + static_cast<std::size_t>(g) * 64 + half * 8 * quads + n * quads + c;
}

// Index (in bf16) of the scale of tile row i of tile t, group g.
MOE_HD std::size_t scale_index(int k_len, int t, int g, int i) {
  return (static_cast<std::size_t>(t) * int4_groups(k_len) + g) * kTileRows + 2 * (i & 7) + (i >> 3);
}
// Index (in 32-bit words) of the scale pair of rows n and n + 8 of tile t, group g.
MOE_HD std::size_t scale_pair_index(int k_len, int t, int g, int n) {
  return scale_index(k_len, t, g, n) / 2;
}

// The same vector and scale in int4_format.hpp's row layout, for the mma family reading a
// layer whose weights are in rows (int4_layout, forward_options.hpp): vector (half, n, c) of
// tile t, group g is vector 4 g + c of source row tile_source_row(t, n + 8 half, paired).
MOE_HD std::size_t row_layout_vector_index(int k_len, int t, int g, int half, int n, int c, int paired) {
  return static_cast<std::size_t>(tile_source_row(t, n + 8 * half, paired)) * (k_len / kVectorCodes) + 4 * g + c;
}
MOE_HD std::size_t row_layout_scale_index(int k_len, int t, int g, int i, int paired) {
  return static_cast<std::size_t>(tile_source_row(t, i, paired)) * int4_groups(k_len) + g;
}

// Where (source row, k) of a [rows, K] tensor lives: word (of 4 bytes) and nibble.
struct CodePlace {
  std::size_t word;
  int nibble;
};
MOE_HD CodePlace code_place(int k_len, int t, int i, int k) {
  const int g = k / kInt4Group, c = (k % kInt4Group) / kVectorCodes, in = k % kVectorCodes;
  return {vector_index(k_len, t, g, i >> 3, i & 7, c) * 4 + in / 8, in % 8};
}

// The inverse maps, for the generator (one thread a word or scale, generate.cu): which source
// row and k (a multiple of 8: the word's first code) word `word` of the codes holds, and which
// source row and group scale `index` holds.
struct WordSource {
  std::size_t row;
  int k0;
};
MOE_HD WordSource word_source(int k_len, std::size_t word, int paired) {
  const std::size_t tile_words = static_cast<std::size_t>(kTileRows) * (k_len / 8);
  const int t = static_cast<int>(word / tile_words);
  const std::size_t in_tile = word % tile_words;
  const int g = static_cast<int>(in_tile / 256), quads = group_quads(k_len, g);
  const int v = static_cast<int>(in_tile % 256) / 4, w = static_cast<int>(in_tile % 4);
  const int half = v / (8 * quads), n = v % (8 * quads) / quads, c = v % quads;
  return {static_cast<std::size_t>(tile_source_row(t, n + 8 * half, paired)),
          kInt4Group * g + kVectorCodes * c + 8 * w};
}
struct ScaleSource {
  std::size_t row;
  int group;
};
MOE_HD ScaleSource scale_source(int k_len, std::size_t index, int paired) {
  const int groups = int4_groups(k_len);
  const std::size_t tg = index / kTileRows;
  const int e = static_cast<int>(index % kTileRows), i = e / 2 + 8 * (e & 1);
  return {static_cast<std::size_t>(tile_source_row(static_cast<int>(tg / groups), i, paired)),
          static_cast<int>(tg % groups)};
}

// Host conversions between int4_format.hpp's row layout and this one (same sizes). `paired`
// as in tile_source_row.
inline void relay_to_mma(const std::uint32_t* rows_packed, const std::uint16_t* rows_scales, std::size_t rows,
                         int k_len, int paired, std::uint32_t* packed, std::uint16_t* scales) {
  const int words = k_len / 8, groups = int4_groups(k_len);
  for (std::size_t t = 0; t < rows / kTileRows; ++t)
    for (int i = 0; i < kTileRows; ++i) {
      const std::size_t src = static_cast<std::size_t>(tile_source_row(static_cast<int>(t), i, paired));
      for (int w = 0; w < words; ++w)
        packed[code_place(k_len, static_cast<int>(t), i, 8 * w).word] = rows_packed[src * words + w];
      for (int g = 0; g < groups; ++g)
        scales[scale_index(k_len, static_cast<int>(t), g, i)] = rows_scales[src * groups + g];
    }
}

inline void relay_from_mma(const std::uint32_t* packed, const std::uint16_t* scales, std::size_t rows, int k_len,
                           int paired, std::uint32_t* rows_packed, std::uint16_t* rows_scales) {
  const int words = k_len / 8, groups = int4_groups(k_len);
  for (std::size_t t = 0; t < rows / kTileRows; ++t)
    for (int i = 0; i < kTileRows; ++i) {
      const std::size_t src = static_cast<std::size_t>(tile_source_row(static_cast<int>(t), i, paired));
      for (int w = 0; w < words; ++w)
        rows_packed[src * words + w] = packed[code_place(k_len, static_cast<int>(t), i, 8 * w).word];
      for (int g = 0; g < groups; ++g)
        rows_scales[src * groups + g] = scales[scale_index(k_len, static_cast<int>(t), g, i)];
    }
}

}  // namespace moe::kernels::int4_mma_layout
