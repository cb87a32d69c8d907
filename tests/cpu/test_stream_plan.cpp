// The streaming expert GEMM's plan on the CPU (kernels/moe/stream_plan.hpp), with the functions
// the kernel runs: the blocks' shares of a phase cover every stage of every unit-pass exactly
// once and stay within one unit-pass of each other; each consumer warp's ring holds whole
// unit-passes, segment by segment, and the warps' loads differ by at most one unit-pass; a
// unit's stages (one tile, or int4 two) copy each of its bytes exactly once; the owning warp
// reads each copied byte exactly once, inside the copies, with no bank conflict in a quarter
// warp's 16-byte reads; the rings fit the block's shared memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/stream_plan.hpp"

using namespace moe::kernels;
using namespace moe::kernels::stream;

namespace {

struct Stage {
  int entry, tile, pass, segment;
};

// The producer's walk of block b's share, as stream_producer.cuh does it: the share of the
// phase's unit-passes, the entry holding its first one, then waves of up to 8 unit-passes dealt
// to the warps in turn from `dealt` on, segment-major. Returns each warp's ring, in order.
std::vector<std::vector<Stage>> block_rings(const std::vector<int>& pairs, int tiles, int pass_tokens, int segments,
                                            int block, int blocks, int& dealt) {
  long long total = 0;
  for (int p : pairs) total += static_cast<long long>(tiles) * passes_of(p, pass_tokens);
  const long long lo = share_begin(total, block, blocks), hi = share_begin(total, block + 1, blocks);
  std::vector<std::vector<Stage>> rings(kConsumerWarps);
  if (lo >= hi) return rings;
  long long before = 0;
  int entry = 0;
  while (before + static_cast<long long>(tiles) * passes_of(pairs[entry], pass_tokens) <= lo)
    before += static_cast<long long>(tiles) * passes_of(pairs[entry++], pass_tokens);
  Place at{entry, static_cast<int>(lo - before)};
  for (long long next = lo; next < hi;) {
    const int wave = static_cast<int>(std::min<long long>(kConsumerWarps, hi - next));
    std::vector<Place> places;
    for (int i = 0; i < wave; ++i) {
      places.push_back(at);
      at = next_place(at, tiles * passes_of(pairs[at.entry], pass_tokens));
    }
    for (int s = 0; s < segments; ++s)
      for (int i = 0; i < wave; ++i) {
        const int passes = passes_of(pairs[places[i].entry], pass_tokens);
        rings[owner_warp(dealt + i)].push_back(
            {places[i].entry, places[i].unit_pass / passes, places[i].unit_pass % passes, s});
      }
    dealt += wave;
    next += wave;
  }
  return rings;
}

}  // namespace

TEST_CASE("stream plan: the blocks' shares cover every stage once; each warp's ring holds whole unit-passes") {
  std::mt19937_64 rng(20261206);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 70), tiles = 1 + static_cast<int>(rng() % 200);
    const int segments = 1 + static_cast<int>(rng() % 8), blocks = 1 + static_cast<int>(rng() % 140);
    const int pass_tokens = rng() % 2 ? 8 : 16, m = 1 + static_cast<int>(rng() % 300);
    const int first_dealt = static_cast<int>(rng() % 20);  // unit-passes of an earlier phase
    std::vector<int> pairs(n);
    for (int& p : pairs) p = 1 + static_cast<int>(rng() % m);  // an active entry has a pair
    CAPTURE(trial);
    // Each stage's count, flat: entry-major, then tile, pass and segment (a map took 9 s here).
    std::vector<long long> base(n + 1, 0);
    for (int e = 0; e < n; ++e) base[e + 1] = base[e] + static_cast<long long>(tiles) * passes_of(pairs[e], pass_tokens) * segments;
    const auto index = [&](const Stage& st) {
      return base[st.entry] + (static_cast<long long>(st.tile) * passes_of(pairs[st.entry], pass_tokens) + st.pass) * segments +
             st.segment;
    };
    std::vector<int> seen(static_cast<std::size_t>(base[n]), 0);
    long long most = 0, least = -1;
    int out_of_order = 0, not_once = 0, stray = 0, uneven_warps = 0;
    for (int b = 0; b < blocks; ++b) {
      int dealt = first_dealt;
      const auto rings = block_rings(pairs, tiles, pass_tokens, segments, b, blocks, dealt);
      long long unit_passes = 0;
      std::vector<long long> per_warp(kConsumerWarps, 0);
      for (int w = 0; w < kConsumerWarps; ++w) {
        const auto& ring = rings[w];
        REQUIRE(ring.size() % segments == 0);
        per_warp[(w - first_dealt % kConsumerWarps + kConsumerWarps) % kConsumerWarps] =
            static_cast<long long>(ring.size()) / segments;
        unit_passes += static_cast<long long>(ring.size()) / segments;
        for (std::size_t i = 0; i < ring.size(); ++i) {
          const Stage& st = ring[i];
          const bool inside = st.entry >= 0 && st.entry < n && st.tile >= 0 && st.tile < tiles && st.pass >= 0 &&
                              st.pass < passes_of(pairs[st.entry], pass_tokens) && st.segment >= 0 && st.segment < segments;
          if (inside) ++seen[static_cast<std::size_t>(index(st))];
          else ++stray;  // a stage of no unit-pass
          // A ring runs segment 0 .. segments - 1 of one unit-pass before the next one.
          const Stage& first = ring[i - i % segments];
          out_of_order += ring[i].segment != static_cast<int>(i % segments) || ring[i].entry != first.entry ||
                          ring[i].tile != first.tile || ring[i].pass != first.pass;
        }
      }
      // Dealt in turn from the phase's first warp on: each warp at most one more than the next.
      for (int w = 0; w + 1 < kConsumerWarps; ++w) uneven_warps += per_warp[w] < per_warp[w + 1] || per_warp[w] > per_warp[w + 1] + 1;
      CHECK(dealt - first_dealt == unit_passes);
      most = std::max(most, unit_passes);
      least = least < 0 ? unit_passes : std::min(least, unit_passes);
    }
    CHECK(out_of_order == 0);
    CHECK(uneven_warps == 0);
    CHECK(most - least <= 1);
    for (int count : seen) not_once += count != 1;
    CHECK(not_once == 0);
    CHECK(stray == 0);  // no stage outside the phase's unit-passes
  }
}

TEST_CASE("stream plan: a ring's items take its own slots in turn, each phase once per lap") {
  for (int w = 0; w < kConsumerWarps; ++w)
    for (int i = 0; i < 4 * kSlotsPerWarp; ++i) {
      CHECK(ring_slot(w, i) / kSlotsPerWarp == w);
      CHECK(ring_slot(w, i) == ring_slot(w, i + kSlotsPerWarp));
      CHECK(ring_parity(i) != ring_parity(i + kSlotsPerWarp));
      if (i % kSlotsPerWarp + 1 < kSlotsPerWarp) CHECK(ring_slot(w, i + 1) == ring_slot(w, i) + 1);
    }
}

TEST_CASE("stream plan: passes cover each entry's tokens once") {
  for (int tokens : {8, 16})
    for (int pairs = 1; pairs <= 200; ++pairs) {
      int covered = 0;
      for (int pass = 0; pass < passes_of(pairs, tokens); ++pass) covered += std::min(tokens, pairs - pass * tokens);
      CHECK(covered == pairs);
      CHECK(pairs - (passes_of(pairs, tokens) - 1) * tokens > 0);  // no empty last pass
    }
}

TEST_CASE("stream plan: a unit's stages copy each byte once; the warps read each copied byte once") {
  // Reduction lengths of the shapes (hidden 2048, 2880, 4096, 7168; inter 768, 1408, 2880,
  // 14336) and of the tiny test shapes (partial int4 groups: 96, 160); units of one tile, and
  // int4 units of two (one copy of codes and one of scales a tile, side by side in the slot).
  for (int k : {32, 64, 96, 160, 768, 1408, 2048, 2880, 4096, 7168, 14336})
    for (bool int4 : {false, true})
      for (int tiles : {1, 2}) {
        if (tiles == 2 && !int4) continue;
        CAPTURE(k);
        CAPTURE(int4);
        CAPTURE(tiles);
        const Segments seg{k, int4, tiles};
        const std::size_t tile_bytes = int4 ? static_cast<std::size_t>(kTileRows) * k / 2 : static_cast<std::size_t>(kTileRows) * k * 2;
        const std::size_t tile_scales = int4 ? static_cast<std::size_t>(kInt4ScaleBytes) * int4_groups(k) : 0;
        // A tile's bytes as one image (codes, then scales), the unit's tiles one after another.
        const std::size_t image = tile_bytes + tile_scales;
        std::vector<int> copies(image * tiles, 0);
        int bank_conflicts = 0, outside = 0, twice = 0, overlapping = 0;
        for (int s = 0; s < seg.count(); ++s) {
          CAPTURE(s);
          // slot byte -> unit byte the producer's copies put there (-1: nothing)
          std::vector<long long> source(slot_bytes(int4), -1);
          auto place = [&](int at, std::size_t from, int bytes) {
            for (int b = 0; b < bytes; ++b) {
              REQUIRE(at + b < slot_bytes(int4));
              overlapping += source[at + b] >= 0;
              source[at + b] = static_cast<long long>(from + b);
              ++copies[from + b];
            }
          };
          REQUIRE(seg.code_bytes(s) % 16 == 0);
          REQUIRE(seg.code_offset(s) % 16 == 0);
          std::uint32_t copied = 0;
          for (int u = 0; u < tiles; ++u) {
            // One copy of the tile's codes of the stage (bf16: values); int4 one of its scales.
            place(int4 ? seg.tile_codes_at(u) : 0, u * image + seg.code_offset(s), seg.code_bytes(s));
            copied += static_cast<std::uint32_t>(seg.code_bytes(s));
            if (int4) {
              REQUIRE(seg.scale_bytes(s) % 16 == 0);
              REQUIRE(seg.tile_codes_at(u) % 16 == 0);
              REQUIRE(seg.tile_scales_at(u) % 16 == 0);
              REQUIRE(seg.tile_codes_at(u) + seg.code_bytes(s) <= kInt4CodeBytes);
              place(seg.tile_scales_at(u), u * image + tile_bytes + static_cast<std::size_t>(kInt4ScaleBytes) * seg.first(s),
                    seg.scale_bytes(s));
              copied += static_cast<std::uint32_t>(seg.scale_bytes(s));
            }
          }
          CHECK(copied == seg.stage_bytes(s));
          // The owning warp's 16-byte reads of the codes (bf16: rows n and n + 8 of every block;
          // int4: vectors (0, n, c) and (1, n, c) of every group of every tile for c < quads).
          std::vector<int> reads(slot_bytes(int4), 0);
          std::vector<std::vector<int>> instructions;  // per load instruction, its lanes' offsets
          if (!int4) {
            for (int b = 0; b < seg.length(s) / 32; ++b)
              for (int half = 0; half < 2; ++half) {
                std::vector<int> offs;
                for (int lane = 0; lane < 32; ++lane) offs.push_back(bf16_slot_offset(b, half, lane / 4, lane % 4));
                instructions.push_back(offs);
              }
          } else {
            for (int u = 0; u < tiles; ++u)
              for (int w = 0; w < seg.length(s); ++w) {
                const int quads = int4_mma_layout::group_quads(k, seg.first(s) + w);
                for (int half = 0; half < 2; ++half) {
                  std::vector<int> offs;
                  for (int lane = 0; lane < 32; ++lane)
                    offs.push_back(lane % 4 < quads ? int4_slot_offset(seg, s, w, half, lane / 4, lane % 4, u) : -1);
                  instructions.push_back(offs);
                }
              }
          }
          for (const auto& offs : instructions) {
            for (int q = 0; q < 4; ++q) {  // a 16-byte load is served a quarter warp at a time
              std::set<int> banks;
              int active = 0;
              for (int lane = 8 * q; lane < 8 * q + 8; ++lane)
                if (offs[lane] >= 0) {
                  ++active;
                  banks.insert(offs[lane] % 128 / 16);
                }
              bank_conflicts += static_cast<int>(banks.size()) != active;
            }
            for (int off : offs)
              if (off >= 0)
                for (int b = 0; b < 16; ++b) {
                  if (source[off + b] < 0) ++outside;
                  ++reads[off + b];
                }
          }
          for (int b = 0; b < (int4 ? kInt4CodeBytes : slot_bytes(false)); ++b)
            if (source[b] >= 0 && reads[b] != 1) ++twice;
          if (int4)  // each group's scale pairs: lane (n, c) reads word n of its slot group's 32 bytes
            for (int u = 0; u < tiles; ++u)
              for (int w = 0; w < seg.length(s); ++w)
                for (int n = 0; n < 8; ++n) {
                  const int off = int4_scale_slot_offset(seg.slot_group(u, w), n);
                  const std::size_t want = u * image + tile_bytes + kInt4ScaleBytes * (seg.first(s) + w) + 4 * n;
                  if (source[off] != static_cast<long long>(want)) ++outside;
                }
        }
        CHECK(bank_conflicts == 0);
        CHECK(outside == 0);
        CHECK(twice == 0);
        CHECK(overlapping == 0);
        CHECK(std::count(copies.begin(), copies.end(), 1) == static_cast<long>(image * tiles));
      }
}

TEST_CASE("stream plan: the rings fit the block's shared memory; a stage fits its slot") {
  for (bool int4 : {false, true}) {
    CHECK(slot_bytes(int4) % 128 == 0);  // every slot a bulk copy's aligned destination
    const SmemLayout layout{slot_bytes(int4)};
    CHECK(layout.headers() == static_cast<std::size_t>(kSlots) * slot_bytes(int4));
    CHECK(layout.barriers() % 8 == 0);
    CHECK(layout.bytes() <= static_cast<std::size_t>(kMaxSmemBytes));
  }
  CHECK(kBf16SegmentBlocks * 32 == kBf16SegmentK);
  CHECK(kSlotsPerWarp >= 2);  // one slot read while the next is in flight
}

TEST_CASE("stream plan: a bf16 lane reads its rows' 8 k of each block from the stage tiles") {
  // Tile 1 of a [32, K] tensor (paired as gate_up with I = 16): the slot holds the segment's
  // bytes; what lane (n, c) reads at bf16_slot_offset(b, half, n, c) must be tile row n + 8 half,
  // k first + 32 b + 8 c .. + 7, as bf16_a and the activations' k map (bf16_lane_k) assume.
  for (int k : {32, 96, 288, 1408, 2880}) {
    CAPTURE(k);
    const Segments seg{k, false};
    int wrong = 0;
    for (int s = 0; s < seg.count(); ++s)
      for (int b = 0; b < seg.length(s) / 32; ++b)
        for (int half = 0; half < 2; ++half)
          for (int lane = 0; lane < 32; ++lane) {
            const int n = lane / 4, c = lane % 4;
            // the element the slot byte came from, in the tile's layout
            const std::size_t in_tile = (static_cast<std::size_t>(seg.code_offset(s)) + bf16_slot_offset(b, half, n, c)) / 2;
            for (int j = 0; j < 8; ++j) {
              const int kk = seg.first(s) + 32 * b + 8 * c + j;
              wrong += bf16_stream_layout::element_of(k, 1, n + 8 * half, kk) != static_cast<std::size_t>(kTileRows) * k + in_tile + j;
            }
          }
    CHECK(wrong == 0);
    // The generator's inverse map agrees: vector v's source row and k hold what element_of says.
    int inverse_wrong = 0;
    for (std::size_t v = 0; v < static_cast<std::size_t>(32) * k / 8; ++v) {
      const bf16_stream_layout::VectorSource src = bf16_stream_layout::vector_source(k, v, 16);
      const int t = static_cast<int>(src.row % 16 / 8), i = static_cast<int>(src.row % 8) + (src.row >= 16 ? 8 : 0);
      inverse_wrong += bf16_stream_layout::element_of(k, t, i, src.k0) != 8 * v;
    }
    CHECK(inverse_wrong == 0);
  }
}

TEST_CASE("stream plan: int4 units take two tiles from two chunks where experts expect two tokens") {
  // The four peer shapes' routed experts (E, top_k) and an expert's gate_up and down tiles.
  CHECK(expert_tiles(true, 4096, 14336) == 1792);  // mixtral-8x7b gate_up: 8 gate and 8 up rows a tile
  CHECK(expert_tiles(false, 2048, 1408) == 128);   // deepseek-v2-lite down: 16 output rows a tile
  CHECK(unit_tiles(true, 8, 2, 8, 1792) == 1);     // one chunk a pass
  CHECK(unit_tiles(true, 16, 2, 8, 1792) == 2);    // mixtral-8x7b: 4 tokens an expert
  CHECK(unit_tiles(true, 16, 6, 64, 128) == 1);    // deepseek-v2-lite: 1.5
  CHECK(unit_tiles(true, 32, 6, 64, 128) == 2);    // 3
  CHECK(unit_tiles(true, 16, 8, 128, 96) == 1);    // qwen3-30b-a3b: 1
  CHECK(unit_tiles(true, 32, 8, 128, 96) == 2);    // 2
  CHECK(unit_tiles(true, 64, 2, 8, 181) == 1);     // tiles that do not pair up
  CHECK(unit_tiles(false, 64, 2, 8, 1792) == 1);   // bf16: always one
  for (int m = 1; m <= 64; ++m)  // from the threshold on, two at every larger M
    if (unit_tiles(true, m, 4, 32, 360) == 2) CHECK(unit_tiles(true, m + 1, 4, 32, 360) == 2);
}
