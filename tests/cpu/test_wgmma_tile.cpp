// The warp-group MMA tiles' index math on the CPU (wgmma_tile.hpp, the functions
// expert_gemm_wgmma.cu runs): the copier's swizzled writes read back through the consumers'
// descriptors, one warp group emulated computing a gate_up (SwiGLU) tile from a ring stage as
// the copier fills it against the plain float64 product, the int4 consumers' dequantisation read
// back through the descriptors (codes in rows or in the stream tiles), the bf16 copies from the
// stage tiles, the weight rows behind a tile, and the persistent tile walk covering every pair of
// every column tile exactly once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "kernels/moe/bf16.hpp"
#include "kernels/moe/bf16_stream_layout.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/int4_stream_layout.hpp"
#include "kernels/moe/wgmma_tile.hpp"

namespace wt = moe::kernels::wgmma_tile;

namespace {

// A shared-memory window; the ring starts on a 1 KB boundary not at 0, as it may on the GPU.
constexpr std::uint32_t kRingBase = 0x2400;

// The copier's writes of `rows` rows of one K block (columns k0..k0+63 of src [rows, K]).
void copy_k_block(std::vector<std::uint16_t>& smem, std::uint32_t tile_base, const std::vector<std::uint16_t>& src,
                  int rows, int K, int k0) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < wt::kChunks; ++c)
      for (int e = 0; e < 8; ++e) {
        const std::uint32_t byte = tile_base + wt::swizzled_offset(r, c) + 2 * e;
        smem.at(byte / 2) = src[static_cast<std::size_t>(r) * K + k0 + 8 * c + e];
      }
}

std::uint16_t read(const std::vector<std::uint16_t>& smem, std::uint32_t byte) { return smem.at(byte / 2); }

}  // namespace

TEST_CASE("a swizzled tile: every chunk once, and one 8-row atom's chunk c in 8 bank groups") {
  std::set<std::uint32_t> seen;
  for (int r = 0; r < 128; ++r)
    for (int c = 0; c < wt::kChunks; ++c) {
      const std::uint32_t o = wt::swizzled_offset(r, c);
      CHECK(o % 16 == 0);
      CHECK(o / wt::kRowBytes == static_cast<std::uint32_t>(r));  // a row stays in its 128 bytes
      CHECK(seen.insert(o).second);
    }
  CHECK(seen.size() == 128u * wt::kChunks);
  for (int c = 0; c < wt::kChunks; ++c) {
    std::set<std::uint32_t> groups;
    for (int r = 0; r < wt::kAtomRows; ++r) groups.insert((wt::swizzled_offset(r, c) % 128) / 16);
    CHECK(groups.size() == 8u);
  }
}

TEST_CASE("the descriptor's fields: start, the 1 KB atom stride and the 128-byte swizzle") {
  const std::uint64_t d = wt::smem_descriptor(kRingBase + 64 * 128 + 32);
  CHECK((d & 0x3FFF) == (kRingBase + 64 * 128 + 32) / 16);
  CHECK(((d >> 16) & 0x3FFF) == 1);
  CHECK(((d >> 32) & 0x3FFF) == 1024 / 16);
  CHECK(((d >> 49) & 7) == 0);  // base offset: the ring is 1 KB aligned
  CHECK((d >> 62) == 1);
}

TEST_CASE("the consumers' descriptors read back what the copier wrote, at every k16 step and both warp groups") {
  std::mt19937 rng(11);
  const int rows = 128, K = 64;
  std::vector<std::uint16_t> src(static_cast<std::size_t>(rows) * K);
  for (auto& v : src) v = static_cast<std::uint16_t>(rng());
  std::vector<std::uint16_t> smem(64 * 1024);
  copy_k_block(smem, kRingBase, src, rows, K, 0);
  for (int wg_row0 : {0, 64})
    for (int kk = 0; kk < wt::kBlockK / wt::kMmaK; ++kk) {
      const std::uint64_t d = wt::smem_descriptor(kRingBase + wg_row0 * wt::kRowBytes + kk * wt::kMmaK * 2);
      int bad = 0;
      for (int r = 0; r < wt::kWarpGroupRows; ++r)
        for (int k = 0; k < wt::kMmaK; ++k)
          bad += read(smem, wt::descriptor_element_address(d, r, k)) !=
                 src[static_cast<std::size_t>(wg_row0 + r) * K + kk * wt::kMmaK + k];
      CHECK_MESSAGE(bad == 0, "warp group rows ", wg_row0, ", k16 step ", kk);
    }
}

TEST_CASE("accumulator registers: each of a warp group's 64 x N outputs once; gate and up of a column in one thread") {
  for (int n : {128, 256}) {
    std::vector<int> hits(64 * n, 0);
    for (int t = 0; t < 128; ++t)
      for (int r = 0; r < n / 2; ++r) {
        const wt::AccumulatorPosition p = wt::accumulator_position(t, r);
        REQUIRE(p.row >= 0);
        REQUIRE(p.row < 64);
        REQUIRE(p.col >= 0);
        REQUIRE(p.col < n);
        ++hits[p.row * n + p.col];
        if (r < n / 4) {  // gate_up's epilogue: register r's up partner is r + N/4
          const wt::AccumulatorPosition up = wt::accumulator_position(t, r + n / 4);
          CHECK(up.row == p.row);
          CHECK(up.col == p.col + n / 2);
        }
        if (r % 2 == 0) {  // registers r, r + 1: adjacent columns of one row (one 2-element store)
          const wt::AccumulatorPosition next = wt::accumulator_position(t, r + 1);
          CHECK(next.row == p.row);
          CHECK(next.col == p.col + 1);
        }
      }
    for (int h : hits) REQUIRE(h == 1);
  }
}

TEST_CASE("one warp group emulated: a gate_up tile over two K blocks, SwiGLU from its registers, against float64") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  constexpr int kN = 128, kRows = 64, kK = 128;
  std::vector<std::uint16_t> a(kRows * kK), b(kN * kK);  // a: pairs' activations, b: gate rows then up rows
  for (auto& v : a) v = moe::kernels::float_to_bf16_bits(u(rng));
  for (auto& v : b) v = moe::kernels::float_to_bf16_bits(u(rng));
  float acc[128][kN / 2];
  for (auto& t : acc)
    for (float& v : t) v = std::nanf("");  // poisoned: the first MMA must not accumulate
  std::vector<std::uint16_t> smem(64 * 1024);
  const std::uint32_t sa = kRingBase, sb = kRingBase + 128 * wt::kRowBytes;
  for (int kb = 0; kb < kK / wt::kBlockK; ++kb) {
    copy_k_block(smem, sa, a, kRows, kK, kb * wt::kBlockK);
    copy_k_block(smem, sb, b, kN, kK, kb * wt::kBlockK);
    for (int kk = 0; kk < wt::kBlockK / wt::kMmaK; ++kk) {
      const std::uint64_t da = wt::smem_descriptor(sa + kk * wt::kMmaK * 2);
      const std::uint64_t db = wt::smem_descriptor(sb + kk * wt::kMmaK * 2);
      const bool accumulate = kb > 0 || kk > 0;
      for (int t = 0; t < 128; ++t)
        for (int r = 0; r < kN / 2; ++r) {
          const wt::AccumulatorPosition p = wt::accumulator_position(t, r);
          float s = accumulate ? acc[t][r] : 0.f;
          for (int k = 0; k < wt::kMmaK; ++k)
            s += moe::kernels::bf16_bits_to_float(read(smem, wt::descriptor_element_address(da, p.row, k))) *
                 moe::kernels::bf16_bits_to_float(read(smem, wt::descriptor_element_address(db, p.col, k)));
          acc[t][r] = s;
        }
    }
  }
  double worst = 0;
  int written = 0;
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < kN / 4; ++r) {
      const wt::AccumulatorPosition p = wt::accumulator_position(t, r);
      double g = 0, up = 0;
      for (int k = 0; k < kK; ++k) {
        const double x = moe::kernels::bf16_bits_to_float(a[p.row * kK + k]);
        g += x * moe::kernels::bf16_bits_to_float(b[p.col * kK + k]);
        up += x * moe::kernels::bf16_bits_to_float(b[(p.col + kN / 2) * kK + k]);
      }
      const double want = g / (1 + std::exp(-g)) * up;
      const float gv = acc[t][r], uv = acc[t][r + kN / 4];
      const double got = gv / (1 + std::exp(-gv)) * uv;
      worst = std::max(worst, std::abs(got - want));
      ++written;
    }
  CHECK(written == kRows * kN / 2);
  CHECK(worst < 1e-3);  // fp32 sums of 128 products of magnitude <= 1
}

TEST_CASE("the persistent walk: every pair of every column tile once, each tile in one expert, experts and bands in turn") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int experts = 1 + static_cast<int>(rng() % 140);
    std::vector<int> offsets(experts + 1, 0), first(experts + 1, 0);
    for (int e = 0; e < experts; ++e) {
      const int kind = static_cast<int>(rng() % 4);  // empty, small, a few tiles, exact multiples
      const int n = kind == 0 ? 0 : kind == 1 ? 1 + static_cast<int>(rng() % 64)
                                : kind == 2 ? static_cast<int>(rng() % 700)
                                            : 128 * static_cast<int>(rng() % 4);
      offsets[e + 1] = offsets[e] + n;
      first[e + 1] = first[e] + (n + 127) / 128;
    }
    const int col_tiles = 1 + static_cast<int>(rng() % 40);
    const int band = trial % 3 == 0 ? 0 : trial % 3 == 1 ? wt::kTileBand : 1 + static_cast<int>(rng() % 5);
    const int pairs = offsets[experts];
    std::vector<int> seen(static_cast<std::size_t>(pairs) * col_tiles, 0);
    int last_expert = 0, last_band = 0, last_col = 0;
    for (int n = 0; n < first[experts] * col_tiles; ++n) {
      const wt::TileWork w = wt::tile_work(n, first.data(), experts, offsets.data(), 128, col_tiles, band);
      REQUIRE(w.rows >= 1);
      REQUIRE(w.rows <= 128);
      REQUIRE(w.first_pair >= offsets[w.expert]);
      REQUIRE(w.first_pair + w.rows <= offsets[w.expert + 1]);
      REQUIRE(w.col_tile >= 0);
      REQUIRE(w.col_tile < col_tiles);
      if (band > 0) {  // experts in turn, an expert's bands in turn, a band's column tiles in turn
        const int row_band = (w.first_pair - offsets[w.expert]) / 128 / band;
        REQUIRE(w.expert >= last_expert);
        if (w.expert == last_expert && n > 0) {
          REQUIRE(row_band >= last_band);
          if (row_band == last_band) REQUIRE(w.col_tile >= last_col);
        }
        last_band = row_band;
      } else {  // column tiles in turn, a column tile's experts in turn
        REQUIRE(w.col_tile >= last_col);
        if (w.col_tile == last_col) REQUIRE(w.expert >= last_expert);
      }
      last_expert = w.expert;
      last_col = w.col_tile;
      for (int r = 0; r < w.rows; ++r) ++seen[static_cast<std::size_t>(w.first_pair + r) * col_tiles + w.col_tile];
    }
    for (int s : seen) REQUIRE(s == 1);
  }
}

TEST_CASE("the walk's band: down always banded, gate_up from 16 column tiles") {
  CHECK(wt::tile_band(false, 1) == wt::kTileBand);
  CHECK(wt::tile_band(false, 8) == wt::kTileBand);  // qwen3-30b-a3b's down
  CHECK(wt::tile_band(true, 6) == 0);                // qwen3-30b-a3b's gate_up: 768 h columns
  CHECK(wt::tile_band(true, 11) == 0);               // deepseek-v2-lite's: 1408
  CHECK(wt::tile_band(true, 15) == 0);
  CHECK(wt::tile_band(true, 16) == wt::kTileBand);
  CHECK(wt::tile_band(true, 23) == wt::kTileBand);   // gpt-oss-20b's: 2880
  CHECK(wt::tile_band(true, 112) == wt::kTileBand);  // mixtral-8x7b's: 14336
}

TEST_CASE("int4: the consumers' dequantisation of a stage's packed rows reads back through the descriptor as q x scale in bf16") {
  std::mt19937 rng(17);
  constexpr int kN = 128, kK = 128;  // two K blocks of one scale group
  std::vector<int> q(kN * kK);
  for (int& v : q) v = static_cast<int>(rng() % 16) - 8;
  const std::vector<std::uint32_t> packed = moe::kernels::int4_pack(q, kN, kK);
  std::vector<float> scale(kN);
  for (float& s : scale) s = moe::kernels::round_to_bf16(0.001f + 0.01f * static_cast<float>(rng() % 100));
  for (int kb = 0; kb < kK / wt::kBlockK; ++kb) {
    // The copier's stage: each row's 32 bytes of this K block side by side.
    std::vector<std::uint32_t> stage(kN * 8);
    for (int n = 0; n < kN; ++n)
      for (int w = 0; w < 8; ++w) stage[n * 8 + w] = packed[static_cast<std::size_t>(n) * (kK / 8) + kb * 8 + w];
    // Thread ct of the 256 consumers: 16 bytes (half) of row ct / 2.
    std::vector<std::uint16_t> smem(64 * 1024);
    for (int ct = 0; ct < 256; ++ct) {
      const int nn = ct / 2, half = ct % 2;
      for (int c = 0; c < 4; ++c) {
        std::uint32_t out[4];
        wt::dequant_word(stage[nn * 8 + half * 4 + c], scale[nn], out);
        const std::uint32_t at = kRingBase + wt::swizzled_offset(nn, half * 4 + c);
        for (int h = 0; h < 4; ++h) {
          smem.at(at / 2 + 2 * h) = static_cast<std::uint16_t>(out[h] & 0xFFFF);
          smem.at(at / 2 + 2 * h + 1) = static_cast<std::uint16_t>(out[h] >> 16);
        }
      }
    }
    int bad = 0;
    for (int kk = 0; kk < wt::kBlockK / wt::kMmaK; ++kk) {
      const std::uint64_t d = wt::smem_descriptor(kRingBase + kk * wt::kMmaK * 2);
      for (int n = 0; n < kN; ++n)
        for (int k = 0; k < wt::kMmaK; ++k) {
          const int col = kb * wt::kBlockK + kk * wt::kMmaK + k;
          const float want = moe::kernels::round_to_bf16(static_cast<float>(q[n * kK + col]) * scale[n]);
          bad += moe::kernels::bf16_bits_to_float(read(smem, wt::descriptor_element_address(d, n, k))) != want;
        }
    }
    CHECK_MESSAGE(bad == 0, "K block ", kb);
  }
}

TEST_CASE("int4 in the stream tiles: each row's 32-code copies and scales where the layout put them, dequantised to the row layout's bits") {
  namespace ml = moe::kernels::int4_mma_layout;
  using moe::kernels::Int4Layout;
  std::mt19937 rng(23);
  for (int K : {2048, 2880, 160})
    for (int paired : {0, 1})
      for (int rows : {32, 96}) {
        CAPTURE(K);
        CAPTURE(paired);
        CAPTURE(rows);
        const int up = paired ? rows / 2 : 0;  // gate_up: the first up row
        std::vector<int> q(static_cast<std::size_t>(rows) * K);
        for (int& v : q) v = static_cast<int>(rng() % 16) - 8;
        const std::vector<std::uint32_t> packed = moe::kernels::int4_pack(q, rows, K);
        const int groups = moe::kernels::int4_groups(K);
        std::vector<std::uint16_t> scales(static_cast<std::size_t>(rows) * groups);
        for (auto& b : scales) b = moe::kernels::float_to_bf16_bits(0.001f + 0.01f * static_cast<float>(rng() % 100));
        std::vector<std::uint32_t> tiles(packed.size());
        std::vector<std::uint16_t> tile_scales(scales.size());
        moe::kernels::int4_stream_layout::relay_to_stream(packed.data(), scales.data(), rows, K, up, tiles.data(),
                                                          tile_scales.data());
        int bad_words = 0, bad_scales = 0, bad_values = 0, bad_inverse = 0;
        for (int row = 0; row < rows; ++row) {
          const ml::TileRow at = ml::tile_row_of(row, up);
          bad_inverse += ml::tile_source_row(at.tile, at.row, up) != row;
          const wt::Int4RowPlace<Int4Layout::stream_tiles> place(row, up);
          const wt::Int4RowPlace<Int4Layout::rows> in_rows(row, up);
          for (int k = 0; k < K; k += 32) {
            // The copier's 16 bytes: the row's codes k..k+31, each word interleaved.
            const std::size_t word = place.codes_offset(K, k) / 4;
            REQUIRE(in_rows.codes_offset(K, k) / 4 == static_cast<std::size_t>(row) * (K / 8) + k / 8);
            const int g = k / moe::kernels::kInt4Group;
            const std::uint16_t scale = tile_scales.at(place.scale_base(K) + g * place.scale_step);
            bad_scales += scale != scales[static_cast<std::size_t>(row) * groups + g];
            for (int w = 0; w < 4; ++w) {
              const std::uint32_t rows_word = packed[static_cast<std::size_t>(row) * (K / 8) + k / 8 + w];
              bad_words += tiles.at(word + w) != moe::kernels::int4_stream_layout::interleave(rows_word);
              // The consumers' dequantisation of the interleaved word gives dequant_word's bits.
              std::uint32_t got[4], want[4];
              wt::dequant_stream_word(tiles.at(word + w), scale, got);
              wt::dequant_word(rows_word, moe::kernels::bf16_bits_to_float(scale), want);
              for (int h = 0; h < 4; ++h) bad_values += got[h] != want[h];
            }
          }
        }
        CHECK(bad_inverse == 0);
        CHECK(bad_words == 0);
        CHECK(bad_scales == 0);
        CHECK(bad_values == 0);
      }
}

TEST_CASE("bf16 in the stage tiles: each row's 8-value copies where the layout put them, every value read once") {
  std::mt19937 rng(29);
  for (int K : {2048, 2880, 160, 96})
    for (int paired : {0, 1})
      for (int rows : {32, 96}) {
        CAPTURE(K);
        CAPTURE(paired);
        CAPTURE(rows);
        const int up = paired ? rows / 2 : 0;  // gate_up: the first up row
        std::vector<std::uint16_t> values(static_cast<std::size_t>(rows) * K);
        for (auto& v : values) v = static_cast<std::uint16_t>(rng());
        std::vector<std::uint16_t> tiles(values.size());
        moe::kernels::bf16_stream_layout::relay_to_tiles(values.data(), rows, K, up, tiles.data());
        std::vector<int> reads(tiles.size(), 0);
        int bad = 0, misaligned = 0;
        for (int row = 0; row < rows; ++row) {
          const wt::Bf16TilePlace place(row, up, K);
          // The copier's K blocks: chunk c of block kt is k = 64 kt + 8 c, past K not copied.
          for (int kt = 0; kt * wt::kBlockK < K; ++kt)
            for (int chunk = 0; chunk < wt::kChunks; ++chunk) {
              const int k = kt * wt::kBlockK + chunk * 8;
              if (k >= K) continue;
              const std::size_t bytes = place.row_bytes + wt::Bf16TilePlace::k_bytes(k);
              misaligned += bytes % 16 != 0;
              for (int e = 0; e < 8; ++e) {
                const std::size_t at = bytes / 2 + e;
                REQUIRE(at < tiles.size());
                ++reads[at];
                bad += tiles[at] != values[static_cast<std::size_t>(row) * K + k + e];
              }
            }
        }
        CHECK(bad == 0);
        CHECK(misaligned == 0);
        CHECK(std::count(reads.begin(), reads.end(), 1) == static_cast<std::ptrdiff_t>(reads.size()));
      }
}

TEST_CASE("a tile's weight rows: every gate and up row (gate_up) or row (down) once over the column tiles, gate and up paired") {
  for (int tile_cols : {128, 256})
    for (int out_rows : {64, 96, 160, 1408, 2880}) {
      CAPTURE(tile_cols);
      CAPTURE(out_rows);
      std::vector<int> gate_up_hits(2 * out_rows, 0), down_hits(out_rows, 0);
      for (int ct = 0; ct * (tile_cols / 2) < out_rows; ++ct)
        for (int nn = 0; nn < tile_cols; ++nn) {
          const int row = wt::tile_weight_row(nn, ct, tile_cols, out_rows, true);
          if (row < 0) continue;
          ++gate_up_hits.at(row);
          if (nn < tile_cols / 2) CHECK(wt::tile_weight_row(nn + tile_cols / 2, ct, tile_cols, out_rows, true) == row + out_rows);
        }
      for (int ct = 0; ct * tile_cols < out_rows; ++ct)
        for (int nn = 0; nn < tile_cols; ++nn)
          if (const int row = wt::tile_weight_row(nn, ct, tile_cols, out_rows, false); row >= 0) ++down_hits.at(row);
      for (int h : gate_up_hits) REQUIRE(h == 1);
      for (int h : down_hits) REQUIRE(h == 1);
    }
}
