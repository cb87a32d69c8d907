#pragma once
// The index math of the warp-group MMA tiles (expert_gemm_wgmma.cu), shared by host and device
// so the CPU tests check the very functions the kernel runs: where a 16-byte chunk of a tile row
// lands in shared memory, the descriptor wgmma reads a tile through, which output element each
// accumulator register of a warp group holds, which (expert, row tile, column tile) a
// persistent block's n-th tile is, where an int4 row's codes and scales sit and how they
// become bf16 in either int4 layout, and where a bf16 row's values sit in the stage tiles.
//
// A tile holds rows of 64 bf16 (128 bytes, one K block), K-major, in the 128-byte swizzle of
// wgmma and TMA: inside each 8-row atom (1 KB, 1 KB aligned) chunk c of row r sits at chunk
// c ^ (r % 8), so the 8 rows' chunk c fall in 8 different bank groups.
#include <cstddef>
#include <cstdint>

#include "kernels/moe/bf16.hpp"
#include "kernels/moe/host_device.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_fragments.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/moe_types.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

namespace moe::kernels::wgmma_tile {

constexpr int kRowBytes = 128;             // one K block of bf16
constexpr int kBlockK = kRowBytes / 2;     // 64 elements
constexpr int kChunks = kRowBytes / 16;    // 16-byte chunks a row
constexpr int kAtomRows = 8;               // rows of one swizzle atom
constexpr int kAtomBytes = kAtomRows * kRowBytes;
constexpr int kMmaK = 16;                  // K of one wgmma.m64nNk16
constexpr int kWarpGroupRows = 64;         // M of one wgmma

// Byte offset of chunk `chunk` of row `row` from a 1 KB aligned tile base.
MOE_HD std::uint32_t swizzled_offset(int row, int chunk) {
  return static_cast<std::uint32_t>(row * kRowBytes + ((chunk ^ (row % kAtomRows)) * 16));
}

// What the hardware does with a 128-byte-swizzled address: bits 4..6 (the chunk) XOR bits 7..9
// (the row within the atom). A descriptor's start may sit 32, 64 or 96 bytes into a row (the
// k16 steps of a K block); the XOR is on the address, so the step lands in the swizzled chunk.
MOE_HD std::uint32_t swizzle_address(std::uint32_t address) {
  return address ^ (((address >> 7) & 7u) << 4);
}

// The 64-bit shared-memory matrix descriptor of wgmma for a K-major tile in the 128-byte
// swizzle: start address, leading-dimension offset (unused by this layout: 1), stride between
// 8-row atoms (1 KB), layout 1 = 128-byte swizzle in bits 62..63. Addresses in 16-byte units.
MOE_HD std::uint64_t smem_descriptor(std::uint32_t smem_address) {
  const std::uint64_t start = (smem_address & 0x3FFFFu) >> 4;
  const std::uint64_t leading = 1;
  const std::uint64_t stride = kAtomBytes >> 4;
  return start | (leading << 16) | (stride << 32) | (std::uint64_t{1} << 62);
}

// The shared-memory byte address wgmma reads for element (row, k) of the 64 x 16 (A) or N x 16
// (B) operand a descriptor names: the layout above, read back. The CPU tests emulate a
// warp group's operand loads with it.
MOE_HD std::uint32_t descriptor_element_address(std::uint64_t desc, int row, int k) {
  const std::uint32_t start = static_cast<std::uint32_t>(desc & 0x3FFFu) << 4;
  const std::uint32_t stride = static_cast<std::uint32_t>((desc >> 32) & 0x3FFFu) << 4;
  const std::uint32_t linear = start + static_cast<std::uint32_t>(row / kAtomRows) * stride +
                               static_cast<std::uint32_t>(row % kAtomRows) * kRowBytes +
                               static_cast<std::uint32_t>(k) * 2;
  return swizzle_address(linear);
}

// Output element of accumulator register `reg` of thread `thread` (0..127) of a warp group after
// wgmma.m64nNk16 with fp32 accumulators: N/2 registers a thread; register 4i + j covers columns
// 8i + 2 (lane % 4) + (j % 2) of row 16 warp + lane / 4 + 8 (j / 2).
struct AccumulatorPosition {
  int row;
  int col;
};
MOE_HD AccumulatorPosition accumulator_position(int thread, int reg) {
  const int warp = thread / 32, lane = thread % 32;
  const int i = reg / 4, j = reg % 4;
  return {16 * warp + lane / 4 + 8 * (j / 2), 8 * i + 2 * (lane % 4) + (j % 2)};
}

// The weight row behind row `nn` (0..tile_cols-1) of a tile's weight operand in column tile
// `col_tile`, or -1 past the matrix: gate_up's tile takes tile_cols / 2 gate rows and the
// matching up rows (out_rows = I further on), so a column's gate and up outputs share a thread;
// down's takes tile_cols rows.
MOE_HD int tile_weight_row(int nn, int col_tile, int tile_cols, int out_rows, bool gate_up) {
  if (gate_up) {
    const int col = col_tile * (tile_cols / 2) + nn % (tile_cols / 2);
    if (col >= out_rows) return -1;
    return nn < tile_cols / 2 ? col : out_rows + col;
  }
  const int row = col_tile * tile_cols + nn;
  return row < out_rows ? row : -1;
}

// The tiles of a layer's expert GEMM: every expert's pairs cut into row tiles of `tile_rows`,
// times `col_tiles` column tiles. `first_tile[e]` is the first row tile of expert e (a prefix
// sum of ceil(pairs / tile_rows), first_tile[experts] the total). Two walks:
//  - band > 0: the experts in turn; an expert's row tiles in bands of up to `band`, a band's
//    column tiles in turn and, within one, the band's row tiles. The blocks that run at once
//    (a grid of SMs: about 8 column tiles of a 16-row band) share both operands through L2, so
//    each band's activations come from memory once for the expert, not once a column tile.
//  - band == 0: column tile n / row_tiles, row tile n % row_tiles over all experts, so the
//    blocks that run at once share a column tile of many experts.
// tile_band picks the walk (docs/design/kernels.md has the A/B): down reads h, a pair's own
// row, which no L2 holds (qwen3-30b-a3b M = 8192: 100 MB), so it is banded; gate_up gathers x by
// token, which L2 holds, and is banded only with many column tiles, where re-reading x for each
// of them costs more than streaming fewer experts' weights at once.
constexpr int kTileBand = 16;
constexpr int kBandedGateUpColTiles = 16;
MOE_HD int tile_band(bool gate_up, int col_tiles) {
  return !gate_up || col_tiles >= kBandedGateUpColTiles ? kTileBand : 0;
}

struct TileWork {
  int expert;
  int first_pair;  // in the grouped (sorted) pair order
  int rows;        // 1..tile_rows
  int col_tile;
};
MOE_HD TileWork tile_work(int n, const int* first_tile, int experts, const int* offsets, int tile_rows, int col_tiles,
                          int band) {
  // The expert: the last whose first tile is at or before the tile's, never an empty one.
  const int row_tiles_all = first_tile[experts];
  const int key = band > 0 ? n : n % row_tiles_all, scale = band > 0 ? col_tiles : 1;
  int lo = 0, hi = experts - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (first_tile[mid] * scale <= key) lo = mid;
    else hi = mid - 1;
  }
  int row_tile = key - first_tile[lo], col_tile = n / row_tiles_all;  // band == 0
  if (band > 0) {
    const int row_tiles = first_tile[lo + 1] - first_tile[lo];
    const int local = n - first_tile[lo] * col_tiles;
    const int band_first = local / (band * col_tiles) * band;
    const int band_rows = row_tiles - band_first < band ? row_tiles - band_first : band;
    const int in_band = local - band_first * col_tiles;
    row_tile = band_first + in_band % band_rows;
    col_tile = in_band / band_rows;
  }
  const int first_pair = offsets[lo] + row_tile * tile_rows;
  const int left = offsets[lo + 1] - first_pair;
  return {lo, first_pair, left < tile_rows ? left : tile_rows, col_tile};
}

// int4 weights: the eight codes of a packed word (elements 8w..8w+7 of a row) times the row's
// group scale, rounded to bf16 as the wmma tiles round them, as half of the 16-byte chunk wgmma
// reads: out[h] holds elements 2h and 2h + 1. On the GPU a pair is one conversion instruction.
MOE_HD void dequant_word(std::uint32_t word, float scale, std::uint32_t (&out)[4]) {
  for (int h = 0; h < 4; ++h) {
    const float lo = static_cast<float>(int4_unpack(word, 2 * h)) * scale;
    const float hi = static_cast<float>(int4_unpack(word, 2 * h + 1)) * scale;
#if defined(__CUDA_ARCH__)
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    out[h] = *reinterpret_cast<const std::uint32_t*>(&pair);
#else
    out[h] = float_to_bf16_bits(lo) | (static_cast<std::uint32_t>(float_to_bf16_bits(hi)) << 16);
#endif
  }
}

// int4 weights in the stream tiles (int4_stream_layout.hpp: code k0 + 2h in nibble h and
// k0 + 2h + 1 in nibble h + 4): the same four pairs, with the same bits, as dequant_word on the
// word in row order. A pair is one AND/OR (128 + code as two bf16), an exact subtraction of 136
// and one multiply by the scale rounded once, where dequant_word converts and rounds each code.
MOE_HD void dequant_stream_word(std::uint32_t word, std::uint16_t scale, std::uint32_t (&out)[4]) {
#if defined(__CUDA_ARCH__)
  const __nv_bfloat162 s2 = __bfloat162bfloat162(__ushort_as_bfloat16(scale));
  const std::uint32_t bias = int4_mma::kBias136Pair;
  for (int h = 0; h < 4; ++h) {
    const std::uint32_t biased = int4_mma::weight_pair_biased(word, h);
    const __nv_bfloat162 q = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&biased),
                                     *reinterpret_cast<const __nv_bfloat162*>(&bias));
    const __nv_bfloat162 v = __hmul2(q, s2);
    out[h] = *reinterpret_cast<const std::uint32_t*>(&v);
  }
#else
  const float s = bf16_bits_to_float(scale);
  for (int h = 0; h < 4; ++h) {
    const std::uint32_t biased = int4_mma::weight_pair_biased(word, h);
    const float lo = bf16_bits_to_float(static_cast<std::uint16_t>(biased & 0xFFFFu)) - 136.f;
    const float hi = bf16_bits_to_float(static_cast<std::uint16_t>(biased >> 16)) - 136.f;
    out[h] = float_to_bf16_bits(lo * s) | (static_cast<std::uint32_t>(float_to_bf16_bits(hi * s)) << 16);
  }
#endif
}

// Where the 32 codes of int4 weight row `row` at k (a multiple of 32) and the row's scales sit:
// the row layout (int4_format.hpp) or the stream tiles (int4_stream_layout.hpp; paired: gate_up's
// first up row, 0 for down). A row's scale of group g is scales[scale_base + g * scale_step].
template <Int4Layout L>
struct Int4RowPlace {
  int tile = 0, tile_row = 0;  // stream tiles
  int row = 0;                 // rows
  Int4RowPlace() = default;
  MOE_HD Int4RowPlace(int r, int paired) : row(r) {
    if constexpr (L == Int4Layout::stream_tiles) {
      const int4_mma_layout::TileRow at = int4_mma_layout::tile_row_of(r, paired);
      tile = at.tile;
      tile_row = at.row;
    }
  }
  MOE_HD std::size_t codes_offset(int k_len, int k) const {  // bytes
    if constexpr (L == Int4Layout::stream_tiles)
      return 16 * int4_mma_layout::vector_index(k_len, tile, k / kInt4Group, tile_row >> 3, tile_row & 7,
                                                (k % kInt4Group) / 32);
    return static_cast<std::size_t>(row) * (k_len / 2) + k / 2;
  }
  MOE_HD std::size_t scale_base(int k_len) const {
    if constexpr (L == Int4Layout::stream_tiles) return int4_mma_layout::scale_index(k_len, tile, 0, tile_row);
    return static_cast<std::size_t>(row) * int4_groups(k_len);
  }
  static constexpr int scale_step = L == Int4Layout::stream_tiles ? int4_mma_layout::kTileRows : 1;
};

// Where a bf16 weight row's 8 values at k (a multiple of 8) sit in the stream family's stage
// tiles (bf16_stream_layout.hpp; paired: gate_up's first up row, 0 for down): the row's part
// of the byte offset, fixed for a tile, plus the k part, the same for every row at that k, so a
// copier thread adds one term a K block to each of its rows. K a multiple of 32.
struct Bf16TilePlace {
  std::size_t row_bytes = 0;
  Bf16TilePlace() = default;
  MOE_HD Bf16TilePlace(int row, int paired, int k_len) {
    const int4_mma_layout::TileRow at = int4_mma_layout::tile_row_of(row, paired);
    row_bytes = 2 * (static_cast<std::size_t>(at.tile) * int4_mma_layout::kTileRows * k_len) +
                16 * static_cast<std::size_t>((at.row >> 3) * 32 + 4 * (at.row & 7));
  }
  MOE_HD static std::size_t k_bytes(int k) {
    const int s = k / 256, b = k % 256 / 32, c = k % 32 / 8;
    return 2 * static_cast<std::size_t>(16 * 256) * s + 16 * static_cast<std::size_t>(64 * b + c);
  }
};

}  // namespace moe::kernels::wgmma_tile
