// The mma expert GEMM's lane arithmetic on the CPU: one warp emulated (32 lanes in a loop, the
// tensor core by the PTX ISA's m16n8k16 fragment layouts) computing gate_up (SwiGLU) and down
// tiles from the weights as the kernel loads them, with the functions the kernel uses
// (expert_mma_fragments.hpp, int4_mma_layout.hpp), against the plain float64 product; the same
// for the stream family's consumer warp reading the stages its producer copies into a slot
// (stream_plan.hpp); the route's logit tile (route_logits_map.hpp); and the int4 re-layout's
// round trip and inverse maps against int4_format.hpp's layout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "kernels/moe/bf16.hpp"
#include "kernels/moe/bf16_stream_layout.hpp"
#include "kernels/moe/expert_mma_fragments.hpp"
#include "kernels/moe/generator.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/int4_stream_layout.hpp"
#include "kernels/moe/route_logits_map.hpp"
#include "kernels/moe/stream_plan.hpp"

using namespace moe::kernels;
namespace layout = moe::kernels::int4_mma_layout;
namespace mma = moe::kernels::expert_mma;

namespace {

struct Lanes {
  std::uint32_t v[32][4];
};

// The tensor core: D = A B + C for the warp's 32 lanes, each operand element taken from the
// lane and register the PTX layout names.
void emulate_mma(float (&d)[32][4], const mma::AFragment (&a)[32], const mma::BFragment (&b)[32]) {
  float am[16][16], bm[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < 2; ++e)
        am[mma::a_row(lane, r)][mma::a_k(lane, r, e)] =
            bf16_bits_to_float(static_cast<std::uint16_t>(a[lane].r[r] >> (16 * e)));
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 2; ++e)
        bm[mma::b_k(lane, r, e)][mma::b_col(lane)] = bf16_bits_to_float(static_cast<std::uint16_t>(b[lane].r[r] >> (16 * e)));
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      float s = 0.f;
      for (int k = 0; k < 16; ++k) s += am[mma::c_row(lane, i)][k] * bm[k][mma::c_col(lane, i)];
      d[lane][i] += s;
    }
}

struct Problem {
  int rows = 0, k = 0, tokens = 0;
  int paired = 0;                       // gate_up: rows / 2
  std::vector<std::uint16_t> x;         // bf16 [tokens, k]
  std::vector<std::uint16_t> w_bf16;    // [rows, k]
  std::vector<std::uint32_t> packed;    // int4, mma layout
  std::vector<std::uint32_t> stream_packed;  // int4, stream tiles (same scales)
  std::vector<std::uint16_t> scales;    // int4, mma layout
  std::vector<double> w;                // the weights' values [rows, k]
};

Problem make_problem(int rows, int k, int tokens, bool gate_up, bool int4, std::uint64_t seed) {
  Problem p;
  p.rows = rows;
  p.k = k;
  p.tokens = tokens;
  p.paired = gate_up ? rows / 2 : 0;
  const std::uint64_t key = stream_key(seed, TensorKind::gate_up, 3), skey = stream_key(seed, TensorKind::int4_scale_gate_up, 3);
  const std::uint64_t xkey = stream_key(seed, TensorKind::input, 0);
  p.x.resize(static_cast<std::size_t>(tokens) * k);
  for (std::size_t i = 0; i < p.x.size(); ++i) p.x[i] = generated_bf16_bits(xkey, i, 1.f);
  p.w.resize(static_cast<std::size_t>(rows) * k);
  if (!int4) {
    p.w_bf16.resize(p.w.size());
    for (std::size_t i = 0; i < p.w.size(); ++i) {
      p.w_bf16[i] = generated_bf16_bits(key, i, inv_sqrt(k));
      p.w[i] = bf16_bits_to_float(p.w_bf16[i]);
    }
    return p;
  }
  std::vector<int> q(p.w.size());
  std::vector<std::uint16_t> row_scales(static_cast<std::size_t>(rows) * int4_groups(k));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < k; ++c) q[static_cast<std::size_t>(r) * k + c] = generated_q4(key, r, k, c);
    for (int g = 0; g < int4_groups(k); ++g)
      row_scales[static_cast<std::size_t>(r) * int4_groups(k) + g] = generated_scale(skey, r, k, g, int4_scale_base(k));
  }
  const std::vector<std::uint32_t> row_packed = int4_pack(q, rows, k);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < k; ++c)
      p.w[static_cast<std::size_t>(r) * k + c] = int4_dequant(row_packed.data(), row_scales.data(), r, k, c);
  p.packed.resize(row_packed.size());
  p.scales.resize(row_scales.size());
  layout::relay_to_mma(row_packed.data(), row_scales.data(), rows, k, p.paired, p.packed.data(), p.scales.data());
  p.stream_packed.resize(row_packed.size());
  std::vector<std::uint16_t> stream_scales(row_scales.size());
  moe::kernels::int4_stream_layout::relay_to_stream(row_packed.data(), row_scales.data(), rows, k, p.paired,
                                                    p.stream_packed.data(), stream_scales.data());
  REQUIRE(stream_scales == p.scales);
  return p;
}

void put(std::uint32_t (&dst)[4], const std::uint32_t* src) {
  for (int i = 0; i < 4; ++i) dst[i] = src ? src[i] : 0u;
}

// The two mma steps of one 32-k bf16 block from the lanes' 16-byte loads of their rows n and
// n + 8 and of their token's activations.
void emulate_bf16_block(const std::uint32_t (&rn)[32][4], const std::uint32_t (&rn8)[32][4],
                        const std::uint32_t (&xw)[32][4], float (&acc)[32][4]) {
  for (int s = 0; s < 2; ++s) {
    mma::AFragment a[32];
    mma::BFragment b[32];
    for (int lane = 0; lane < 32; ++lane) {
      a[lane] = mma::bf16_a(rn[lane], rn8[lane], s);
      b[lane] = mma::bf16_b(xw[lane], s);
    }
    emulate_mma(acc, a, b);
  }
}

// One int4 group: the 8 mma steps from the lanes' vectors of codes (rows n and n + 8), x(lane,
// w, words) giving a lane's activation word w (0..3) of its 32 k, then acc += d x the scales
// pair(lane) holds (rows n and n + 8), in fp32 as the kernels do. stream: the stream tiles, as
// the stream consumer multiplies them (B the activation words as loaded, even and odd steps in
// two sums); otherwise the mma fragment layout.
void emulate_int4_group(const std::uint32_t (&vn)[32][4], const std::uint32_t (&vn8)[32][4],
                        const std::function<void(int, int, std::uint32_t (&)[4])>& x,
                        const std::function<std::uint32_t(int)>& pair, float (&acc)[32][4], bool stream = false) {
  float d[2][32][4] = {};
  for (int s = 0; s < 8; ++s) {
    mma::AFragment a[32];
    mma::BFragment b[32];
    for (int lane = 0; lane < 32; ++lane) {
      std::uint32_t xw[4] = {};
      x(lane, s / 2, xw);
      a[lane] = mma::int4_a(vn[lane], vn8[lane], s);
      b[lane] = stream ? mma::int4_stream_b(xw, s) : mma::int4_b(xw, s);
    }
    emulate_mma(d[stream ? s & 1 : 0], a, b);
  }
  for (int lane = 0; lane < 32; ++lane) {
    const std::uint32_t sp = pair(lane);
    const float sn = bf16_bits_to_float(static_cast<std::uint16_t>(sp)), sn8 = bf16_bits_to_float(static_cast<std::uint16_t>(sp >> 16));
    for (int i = 0; i < 4; ++i) acc[lane][i] += (d[0][lane][i] + d[1][lane][i]) * (i < 2 ? sn : sn8);
  }
}

// One tile (16 rows: tile_source_row) for one chunk of up to 8 tokens, as the kernel's warp
// computes it: out[token][tile row] before the epilogue.
void warp_tile(const Problem& p, bool int4, int tile, int t0, float (&acc)[32][4]) {
  const int tn = std::min(8, p.tokens - t0);
  for (auto& l : acc)
    for (float& v : l) v = 0.f;
  auto x_words = [&](int lane, int k0) -> const std::uint32_t* {
    const int tok = t0 + lane / 4;
    if (tok >= t0 + tn || k0 >= p.k) return nullptr;
    return reinterpret_cast<const std::uint32_t*>(p.x.data() + static_cast<std::size_t>(tok) * p.k + k0);
  };
  if (!int4) {
    for (int block = 0; block * 32 < p.k; ++block) {
      std::uint32_t rn[32][4], rn8[32][4], xw[32][4];
      for (int lane = 0; lane < 32; ++lane) {
        const int n = lane / 4, c = lane % 4, kk = mma::bf16_lane_k(block, c);
        const int r0 = layout::tile_source_row(tile, n, p.paired), r1 = layout::tile_source_row(tile, n + 8, p.paired);
        put(rn[lane], reinterpret_cast<const std::uint32_t*>(p.w_bf16.data() + static_cast<std::size_t>(r0) * p.k + kk));
        put(rn8[lane], reinterpret_cast<const std::uint32_t*>(p.w_bf16.data() + static_cast<std::size_t>(r1) * p.k + kk));
        put(xw[lane], x_words(lane, kk));
      }
      emulate_bf16_block(rn, rn8, xw, acc);
    }
    return;
  }
  for (int g = 0; g < int4_groups(p.k); ++g) {
    const int quads = layout::group_quads(p.k, g);
    std::uint32_t vn[32][4], vn8[32][4];
    for (int lane = 0; lane < 32; ++lane) {
      const int n = lane / 4, c = lane % 4;
      const bool has = c < quads;
      put(vn[lane], has ? p.packed.data() + 4 * layout::vector_index(p.k, tile, g, 0, n, c) : nullptr);
      put(vn8[lane], has ? p.packed.data() + 4 * layout::vector_index(p.k, tile, g, 1, n, c) : nullptr);
    }
    emulate_int4_group(
        vn, vn8,
        [&](int lane, int w, std::uint32_t (&xw)[4]) {
          put(xw, lane % 4 < quads ? x_words(lane, mma::int4_lane_x_k(g, lane % 4, w)) : nullptr);
        },
        [&](int lane) {
          return reinterpret_cast<const std::uint32_t*>(p.scales.data())[layout::scale_pair_index(p.k, tile, g, lane / 4)];
        },
        acc);
  }
}

// The same tile and chunk through the stream family: for each K segment the producer's copies
// into a slot (poisoned first), then the warp that owns the unit-pass reads the whole slot and
// accumulates into its sums, segment by segment, as the kernel does. With two tiles a unit
// (int4), the slot holds both tiles' stage and the warp reads the tile's own part of it.
void stream_unit_tile(const Problem& p, bool int4, int tile, int t0, float (&acc)[32][4], int unit_tiles) {
  namespace st = moe::kernels::stream;
  const st::Segments seg{p.k, int4, unit_tiles};
  const int first_tile = tile - tile % unit_tiles, u = tile % unit_tiles;
  const int tn = std::min(8, p.tokens - t0);
  for (auto& a : acc) a[0] = a[1] = a[2] = a[3] = 0.f;
  std::vector<unsigned char> slot(st::slot_bytes(int4));
  auto x_words = [&](int lane, int k0, std::uint32_t (&dst)[4]) {
    const int tok = t0 + lane / 4;
    put(dst, tok < t0 + tn ? reinterpret_cast<const std::uint32_t*>(p.x.data() + static_cast<std::size_t>(tok) * p.k + k0)
                           : nullptr);
  };
  auto slot_words = [&](int offset, std::uint32_t (&dst)[4]) { std::memcpy(dst, slot.data() + offset, 16); };
  std::vector<std::uint16_t> tiles;  // bf16: the weights in the stage tiles, as generated for the family
  if (!int4) {
    tiles.resize(p.w_bf16.size());
    moe::kernels::bf16_stream_layout::relay_to_tiles(p.w_bf16.data(), static_cast<std::size_t>(p.rows), p.k, p.paired,
                                                     tiles.data());
  }
  for (int s = 0; s < seg.count(); ++s) {
    std::fill(slot.begin(), slot.end(), static_cast<unsigned char>(0xA5));
    if (!int4) {
      std::memcpy(slot.data(), tiles.data() + (static_cast<std::size_t>(tile) * st::kTileRows * p.k * 2 + seg.code_offset(s)) / 2,
                  seg.code_bytes(s));
      for (int b = 0; b < seg.length(s) / 32; ++b) {
        std::uint32_t rn[32][4], rn8[32][4], xw[32][4];
        for (int lane = 0; lane < 32; ++lane) {
          const int n = lane / 4, c = lane % 4;
          slot_words(st::bf16_slot_offset(b, 0, n, c), rn[lane]);
          slot_words(st::bf16_slot_offset(b, 1, n, c), rn8[lane]);
          x_words(lane, seg.first(s) + mma::bf16_lane_k(b, c), xw[lane]);
        }
        emulate_bf16_block(rn, rn8, xw, acc);
      }
      continue;
    }
    const auto* codes = reinterpret_cast<const unsigned char*>(p.stream_packed.data());
    const auto* scales = reinterpret_cast<const unsigned char*>(p.scales.data());
    for (int v = 0; v < unit_tiles; ++v) {  // the producer's copies: each tile of the unit
      std::memcpy(slot.data() + seg.tile_codes_at(v),
                  codes + static_cast<std::size_t>(first_tile + v) * st::kTileRows * p.k / 2 + seg.code_offset(s),
                  seg.code_bytes(s));
      std::memcpy(slot.data() + seg.tile_scales_at(v),
                  scales + (static_cast<std::size_t>(first_tile + v) * int4_groups(p.k) + seg.first(s)) * st::kInt4ScaleBytes,
                  seg.scale_bytes(s));
    }
    for (int j = 0; j < seg.length(s); ++j) {
      const int g = seg.first(s) + j, quads = layout::group_quads(p.k, g), sj = seg.slot_group(u, j);
      std::uint32_t vn[32][4] = {}, vn8[32][4] = {};
      for (int lane = 0; lane < 32; ++lane)
        if (lane % 4 < quads) {
          slot_words(st::int4_slot_offset(seg, s, j, 0, lane / 4, lane % 4, u), vn[lane]);
          slot_words(st::int4_slot_offset(seg, s, j, 1, lane / 4, lane % 4, u), vn8[lane]);
        }
      for (int lane = 0; lane < 32 && seg.whole_groups(s); ++lane)  // the offsets the whole-group path uses
        for (int half = 0; half < 2; ++half)
          CHECK(st::int4_whole_slot_offset(sj, half, lane / 4, lane % 4) ==
                st::int4_slot_offset(seg, s, j, half, lane / 4, lane % 4, u));
      emulate_int4_group(
          vn, vn8,
          [&](int lane, int word, std::uint32_t (&xw)[4]) {
            if (lane % 4 < quads) x_words(lane, mma::int4_lane_x_k(g, lane % 4, word), xw);
          },
          [&](int lane) {
            std::uint32_t pair;
            std::memcpy(&pair, slot.data() + st::int4_scale_slot_offset(sj, lane / 4), 4);
            return pair;
          },
          acc, true);
    }
  }
}

void stream_tile(const Problem& p, bool int4, int tile, int t0, float (&acc)[32][4]) {
  stream_unit_tile(p, int4, tile, t0, acc, 1);
}
void stream_tile_of_two(const Problem& p, bool int4, int tile, int t0, float (&acc)[32][4]) {
  stream_unit_tile(p, int4, tile, t0, acc, 2);
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

using TileFunction = std::function<void(const Problem&, bool, int, int, float (&)[32][4])>;

// Every tile and chunk of a problem through the emulated warp against the float64 product:
// gate_up as h = silu(gate) * up per (token, h column), down as the output rows. Returns the
// number of outputs outside the bound (fp32 accumulation: 1e-5 of the sum of |w x|).
int check_problem(const Problem& p, bool int4, bool gate_up, const TileFunction& compute = warp_tile) {
  int bad = 0, written = 0;
  std::vector<int> seen(static_cast<std::size_t>(p.tokens) * p.rows, 0);
  auto ref = [&](int tok, int row, double& mag) {
    double s = 0;
    mag = 0;
    for (int c = 0; c < p.k; ++c) {
      const double v = p.w[static_cast<std::size_t>(row) * p.k + c] * bf16_bits_to_float(p.x[static_cast<std::size_t>(tok) * p.k + c]);
      s += v;
      mag += std::abs(v);
    }
    return s;
  };
  for (int tile = 0; tile < p.rows / 16; ++tile)
    for (int t0 = 0; t0 < p.tokens; t0 += 8) {
      float acc[32][4];
      compute(p, int4, tile, t0, acc);
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) {
          const int tok = t0 + mma::c_col(lane, i);
          if (tok >= p.tokens) continue;
          const int row = layout::tile_source_row(tile, mma::c_row(lane, i), p.paired);
          double mag = 0;
          const double want = ref(tok, row, mag);
          if (!(std::abs(acc[lane][i] - want) <= 1e-5 * mag + 1e-30)) ++bad;
          ++seen[static_cast<std::size_t>(tok) * p.rows + row];
          ++written;
          if (gate_up && i < 2) {  // the epilogue's pair: gate in value i, up in value i + 2
            double mu = 0;
            const int up_row = layout::tile_source_row(tile, mma::c_row(lane, i + 2), p.paired);
            if (up_row != row + p.paired || mma::c_col(lane, i + 2) != mma::c_col(lane, i)) ++bad;
            const double h = silu(acc[lane][i]) * acc[lane][i + 2], hr = silu(want) * ref(tok, up_row, mu);
            if (!(std::abs(h - hr) <= 1e-4 * (std::abs(hr) + 1e-3))) ++bad;
          }
        }
    }
  for (int v : seen) bad += v != 1;  // every output exactly once
  CHECK(written == p.tokens * p.rows);
  return bad;
}

}  // namespace

TEST_CASE("int4 mma layout: generate -> pack -> unpack is bit-exact against the row layout") {
  for (int k : {32, 64, 96, 128, 160, 2880, 768}) {
    for (int paired : {0, 1}) {
      const int rows = 64;
      const int pr = paired ? rows / 2 : 0;
      CAPTURE(k);
      CAPTURE(pr);
      const std::uint64_t key = stream_key(7, TensorKind::down, 1), skey = stream_key(7, TensorKind::int4_scale_down, 1);
      std::vector<int> q(static_cast<std::size_t>(rows) * k);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < k; ++c) q[static_cast<std::size_t>(r) * k + c] = generated_q4(key, r, k, c);
      const std::vector<std::uint32_t> row_packed = int4_pack(q, rows, k);
      std::vector<std::uint16_t> row_scales(static_cast<std::size_t>(rows) * int4_groups(k));
      for (std::size_t i = 0; i < row_scales.size(); ++i)
        row_scales[i] = generated_scale(skey, i / int4_groups(k), k, static_cast<int>(i % int4_groups(k)), int4_scale_base(k));
      REQUIRE(row_packed.size() * 4 == int4_packed_bytes(rows, k));
      std::vector<std::uint32_t> packed(row_packed.size(), 0xDEADBEEFu), back(row_packed.size(), 0u);
      std::vector<std::uint16_t> scales(row_scales.size(), 0xFFFFu), back_scales(row_scales.size(), 0u);
      layout::relay_to_mma(row_packed.data(), row_scales.data(), rows, k, pr, packed.data(), scales.data());
      layout::relay_from_mma(packed.data(), scales.data(), rows, k, pr, back.data(), back_scales.data());
      CHECK(back == row_packed);
      CHECK(back_scales == row_scales);
      // The generator's inverse maps give every word and scale of the re-laid arrays.
      int bad = 0;
      std::vector<std::uint32_t> stream_packed(row_packed.size());
      std::vector<std::uint16_t> stream_scales(row_scales.size());
      moe::kernels::int4_stream_layout::relay_to_stream(row_packed.data(), row_scales.data(), rows, k, pr,
                                                        stream_packed.data(), stream_scales.data());
      CHECK(stream_scales == scales);
      for (std::size_t wi = 0; wi < packed.size(); ++wi) {
        const layout::WordSource src = layout::word_source(k, wi, pr);
        std::uint32_t w = 0, sw = 0;  // as generate_int4_mma_kernel places them, both layouts
        for (int j = 0; j < 8; ++j) {
          const std::uint32_t code = int4_nibble(generated_q4(key, src.row, k, src.k0 + j));
          w |= code << (4 * j);
          sw |= code << (4 * moe::kernels::int4_stream_layout::nibble_of(j));
        }
        bad += w != packed[wi];
        bad += sw != stream_packed[wi];
      }
      for (std::size_t si = 0; si < scales.size(); ++si) {
        const layout::ScaleSource src = layout::scale_source(k, si, pr);
        bad += generated_scale(skey, src.row, k, src.group, int4_scale_base(k)) != scales[si];
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("int4 mma family on the row layout: every lane loads the fragment layout's vectors and scales") {
  std::mt19937_64 rng(11);
  for (int k : {32, 96, 160, 768, 1408, 2880}) {
    for (int paired : {0, 1}) {
      const int rows = 64, pr = paired ? rows / 2 : 0, groups = int4_groups(k);
      CAPTURE(k);
      CAPTURE(pr);
      std::vector<std::uint32_t> row_packed(static_cast<std::size_t>(rows) * k / 8);
      std::vector<std::uint16_t> row_scales(static_cast<std::size_t>(rows) * groups);
      for (auto& w : row_packed) w = static_cast<std::uint32_t>(rng());
      for (auto& x : row_scales) x = static_cast<std::uint16_t>(rng());
      std::vector<std::uint32_t> packed(row_packed.size());
      std::vector<std::uint16_t> scales(row_scales.size());
      layout::relay_to_mma(row_packed.data(), row_scales.data(), rows, k, pr, packed.data(), scales.data());
      // The vectors a warp's lanes load for every tile and group (those of a partial group's
      // quads), and the scale pair of rows n and n + 8, at the two layouts' addresses.
      int bad = 0, loads = 0;
      for (int t = 0; t < rows / layout::kTileRows; ++t)
        for (int g = 0; g < groups; ++g)
          for (int lane = 0; lane < 32; ++lane) {
            const int n = lane >> 2, q = lane & 3;
            for (int half = 0; half < 2 && q < layout::group_quads(k, g); ++half, ++loads) {
              const std::size_t f = layout::vector_index(k, t, g, half, n, q);
              const std::size_t r = layout::row_layout_vector_index(k, t, g, half, n, q, pr);
              for (int w = 0; w < 4; ++w) bad += packed[4 * f + w] != row_packed[4 * r + w];
            }
            for (int i : {n, n + 8})
              bad += scales[layout::scale_index(k, t, g, i)] != row_scales[layout::row_layout_scale_index(k, t, g, i, pr)];
          }
      CHECK(loads * 4 == static_cast<int>(packed.size()));  // every vector once
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("int4 stream tiles: a word's codes interleaved pair with the activation words as loaded") {
  namespace sl = moe::kernels::int4_stream_layout;
  int nibbles[8] = {};
  for (int i = 0; i < 8; ++i) ++nibbles[sl::nibble_of(i)];
  for (int v : nibbles) CHECK(v == 1);
  std::mt19937_64 rng(5);
  for (int t = 0; t < 2000; ++t) {
    const std::uint32_t w = static_cast<std::uint32_t>(rng());
    const std::uint32_t iw = sl::interleave(w);
    CHECK(sl::deinterleave(iw) == w);
    for (int j = 0; j < 4; ++j) {  // pair j: codes k0 + 2j (low half) and k0 + 2j + 1, biased by 136
      const std::uint32_t biased = moe::kernels::int4_mma::weight_pair_biased(iw, j);
      CHECK(bf16_bits_to_float(static_cast<std::uint16_t>(biased)) == static_cast<float>(int4_unpack(w, 2 * j) + 136));
      CHECK(bf16_bits_to_float(static_cast<std::uint16_t>(biased >> 16)) == static_cast<float>(int4_unpack(w, 2 * j + 1) + 136));
    }
  }
  // Step s's B registers are activation words 2s and 2s + 1 of the lane's 32 k, the k its A
  // registers' codes sit at.
  for (int s = 0; s < 8; ++s) {
    const std::uint32_t x[4] = {4u * (s / 2), 4u * (s / 2) + 1, 4u * (s / 2) + 2, 4u * (s / 2) + 3};  // word indices
    const mma::BFragment b = mma::int4_stream_b(x, s);
    for (int r = 0; r < 2; ++r) {
      CHECK(b.r[r] == static_cast<std::uint32_t>(2 * s + r));
      CHECK(expert_mma::int4_stream_group_k(0, s, r, 0) == 2 * static_cast<int>(b.r[r]));
      const int code_k = 8 * (s / 2) + 2 * moe::kernels::int4_mma::pair_of(s, r);  // pair j of word s / 2: k0 + 2j
      CHECK(code_k == expert_mma::int4_stream_group_k(0, s, r, 0));
    }
  }
}

TEST_CASE("int4 dequantisation in registers gives the codes exactly") {
  for (std::uint32_t seed = 0; seed < 2000; ++seed) {
    const std::uint32_t word = static_cast<std::uint32_t>(mix64(seed));
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t pair = expert_mma::dequant_pair(word, j);
      CHECK(bf16_bits_to_float(static_cast<std::uint16_t>(pair)) == static_cast<float>(int4_unpack(word, j)));
      CHECK(bf16_bits_to_float(static_cast<std::uint16_t>(pair >> 16)) == static_cast<float>(int4_unpack(word, j + 4)));
    }
  }
}

TEST_CASE("the fragment k maps cover each block once") {
  int bf16_seen[32] = {}, int4_seen[128] = {}, stream_seen[128] = {};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 2; ++e) {
        for (int s = 0; s < 2; ++s) ++bf16_seen[expert_mma::bf16_block_k(c, s, r, e)];
        for (int s = 0; s < 8; ++s) ++int4_seen[expert_mma::int4_group_k(c, s, r, e)];
        for (int s = 0; s < 8; ++s) ++stream_seen[expert_mma::int4_stream_group_k(c, s, r, e)];
      }
  for (int v : bf16_seen) CHECK(v == 1);
  for (int v : int4_seen) CHECK(v == 1);
  for (int v : stream_seen) CHECK(v == 1);
}

TEST_CASE("one emulated warp computes gate_up and down tiles equal to the plain product") {
  std::mt19937_64 rng(20261201);
  struct Case {
    int rows, k;
  };
  // Partial groups (2880 = 22 x 128 + 64; 96; 160), K tails of the bf16 64-k pieces (96, 160),
  // several tiles.
  const Case cases[] = {{32, 2880}, {64, 96}, {48, 160}, {32, 128}, {16, 32}, {32, 224}};
  for (bool int4 : {false, true})
    for (bool gate_up : {false, true})
      for (const Case& cs : cases) {
        const int rows = gate_up && cs.rows % 32 != 0 ? cs.rows * 2 : cs.rows;  // two halves of whole tiles
        for (int m = 1; m <= 64; ++m) {
          if (cs.k == 2880 && m % 9 != 1 && m != 64 && m != 8) continue;  // keep the long row's cases few
          CAPTURE(int4);
          CAPTURE(gate_up);
          CAPTURE(rows);
          CAPTURE(cs.k);
          CAPTURE(m);
          const Problem p = make_problem(rows, cs.k, m, gate_up, int4, rng());
          CHECK(check_problem(p, int4, gate_up) == 0);
        }
      }
}

TEST_CASE("the stream family's emulated consumer warp computes tiles equal to the plain product") {
  std::mt19937_64 rng(20261206);
  struct Case {
    int rows, k;
  };
  // Several segments (1408: bf16 5 x 256 + 128, int4 8 + 3 groups; 2880: partial last group),
  // partial groups and short segments (96, 160), one block (32).
  const Case cases[] = {{32, 2880}, {32, 1408}, {64, 96}, {48, 160}, {16, 32}, {32, 1152}};
  for (bool int4 : {false, true})
    for (bool gate_up : {false, true})
      for (const Case& cs : cases) {
        const int rows = gate_up && cs.rows % 32 != 0 ? cs.rows * 2 : cs.rows;
        for (int m : {1, 3, 8, 9, 16}) {
          CAPTURE(int4);
          CAPTURE(gate_up);
          CAPTURE(rows);
          CAPTURE(cs.k);
          CAPTURE(m);
          const Problem p = make_problem(rows, cs.k, m, gate_up, int4, rng());
          CHECK(check_problem(p, int4, gate_up, stream_tile) == 0);
          if (int4 && rows / 16 % 2 == 0)  // units of two tiles, at every m (unit_tiles takes them from 9)
            CHECK(check_problem(p, int4, gate_up, stream_tile_of_two) == 0);
        }
      }
}

// The route's logits of one block: 16 router rows by 8 tokens, every warp's 32-k units through
// the emulated tensor core with the lanes' loads as route_logits.cuh makes them (rows and tokens
// past the tile repeated, vectors past H zero), then the warps' partials in warp order, against
// the float64 dot products, for K a multiple of 32 or not and tiles not full.
TEST_CASE("the route's logit tile on tensor cores equals the plain dot products") {
  using namespace moe::kernels::route;
  std::uint64_t seed = 20261207;
  for (int hidden : {64, 200, 2048, 2056, 2880})
    for (int ne : {1, 5, 16})
      for (int tn : {1, 3, 8}) {
        CAPTURE(hidden);
        CAPTURE(ne);
        CAPTURE(tn);
        const Problem p = make_problem(ne, hidden, tn, false, false, ++seed);  // w: the router rows
        const auto words = [&](const std::vector<std::uint16_t>& v, int row, int k, std::uint32_t (&out)[4]) {
          for (int i = 0; i < 4; ++i)
            out[i] = vector_in_row(k, hidden) ? v[static_cast<std::size_t>(row) * hidden + k + 2 * i] |
                                                    (static_cast<std::uint32_t>(v[static_cast<std::size_t>(row) * hidden + k + 2 * i + 1]) << 16)
                                              : 0u;
        };
        float partial[kRouteWarps][kTileExperts][kRouteTokens] = {};
        for (int warp = 0; warp < kRouteWarps; ++warp) {
          float acc[32][4] = {};
          for (int j = 0; warp_unit(warp, j) < logit_units(hidden); ++j) {
            std::uint32_t rn[32][4], rn8[32][4], xw[32][4];
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane >> 2, k = unit_lane_k(warp_unit(warp, j), lane & 3);
              words(p.w_bf16, tile_member(g, ne), k, rn[lane]);
              words(p.w_bf16, tile_member(g + 8, ne), k, rn8[lane]);
              words(p.x, tile_member(g, tn), k, xw[lane]);
            }
            emulate_bf16_block(rn, rn8, xw, acc);
          }
          for (int lane = 0; lane < 32; ++lane)
            for (int i = 0; i < 4; ++i) partial[warp][mma::c_row(lane, i)][mma::c_col(lane, i)] = acc[lane][i];
        }
        int wrong = 0;
        for (int e = 0; e < ne; ++e)
          for (int t = 0; t < tn; ++t) {
            float sum = 0.f;
            for (int w = 0; w < kRouteWarps; ++w) sum += partial[w][e][t];
            double ref = 0, scale = 0;
            for (int k = 0; k < hidden; ++k) {
              const double v = p.w[static_cast<std::size_t>(e) * hidden + k] *
                               bf16_bits_to_float(p.x[static_cast<std::size_t>(t) * hidden + k]);
              ref += v;
              scale += std::abs(v);
            }
            wrong += std::abs(sum - ref) > 1e-5 * scale + 1e-30;
          }
        CHECK(wrong == 0);
      }
}

// Which route sums on tensor cores: from two tokens on sm_80 and newer, one token and older
// devices on the SIMT path, with the one-kernel route's block rows to match (a block a row
// there, so its blocks still spread the router's read over the SMs).
TEST_CASE("the route's logits take the tensor-core tile from two tokens on sm_80") {
  using namespace moe::kernels::route;
  CHECK_FALSE(logits_on_tensor_cores(1, 90));
  CHECK(logits_on_tensor_cores(2, 90));
  CHECK(logits_on_tensor_cores(64, 80));
  CHECK_FALSE(logits_on_tensor_cores(64, 75));
  CHECK(route_block_rows(true) == kTileExperts);
  CHECK(route_block_rows(false) == 1);
}
