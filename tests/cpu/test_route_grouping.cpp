// The route's grouping over the grid (kernels/moe/route_grouping_map.hpp, route_grouping.cuh) on
// the CPU, with the functions the kernels use: the ranking blocks' tile bytes read back as the
// membership words (bit t % 32 of word t / 32: token t chose the expert), the words' prefix
// sums and counts, and every pair's place, against a stable sort of the pairs by expert.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/moe/route_grouping_map.hpp"

using namespace moe::kernels::route;
using moe::kernels::grouped_position;

namespace {

struct Grouping {
  std::vector<int> counts, offsets, sorted_pairs, pair_position;
};

// What route_kernel's ranking blocks, route_group_words_kernel and route_group_pairs_kernel
// compute, block by block and warp by warp in turn. The byte rows start as `poison`, which
// every byte the grouping reads must overwrite.
Grouping group_over_grid(const std::vector<int>& ids, int m, int experts, int shared, int k, std::uint8_t poison) {
  const int et = experts + shared, tiles = (m + kRouteTokens - 1) / kRouteTokens, words = (m + 31) / 32;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(et) * 4 * words, poison);
  for (int tile = 0; tile < tiles; ++tile) {  // write_tile_membership
    const int t0 = tile * kRouteTokens, tn = std::min(kRouteTokens, m - t0);
    std::vector<std::uint32_t> masks(et, 0);
    for (int e = experts; e < et; ++e) masks[e] = (1u << tn) - 1u;
    for (int i = 0; i < tn * k; ++i) masks[ids[t0 * k + i]] |= 1u << (i / k);
    const int span = tile == tiles - 1 ? 4 * words - tile : 1;
    for (int e = 0; e < et; ++e)
      for (int b = 0; b < span; ++b)
        bytes[membership_tile_byte(e, tile + b, words)] = b == 0 ? static_cast<std::uint8_t>(masks[e]) : 0;
  }
  std::vector<std::uint32_t> membership(static_cast<std::size_t>(et) * words);
  std::memcpy(membership.data(), bytes.data(), bytes.size());  // the words the next kernel loads (little-endian)
  Grouping g;
  std::vector<int> prefix(membership.size());
  g.counts.assign(et, 0);
  for (int e = 0; e < et; ++e)  // prefix_membership_words
    for (int w = 0; w < words; ++w) {
      prefix[static_cast<std::size_t>(e) * words + w] = g.counts[e];
      g.counts[e] += std::popcount(membership[static_cast<std::size_t>(e) * words + w]);
    }
  g.offsets.assign(et + 1, 0);  // place_experts
  std::partial_sum(g.counts.begin(), g.counts.end(), g.offsets.begin() + 1);
  const int slots = k + shared, pairs = m * slots;
  g.sorted_pairs.assign(pairs, -1);
  g.pair_position.assign(pairs, -1);
  for (int i = 0; i < pairs; ++i) {  // place_grouped_pairs
    const int t = i / slots, s = i % slots, e = s < k ? ids[t * k + s] : experts + (s - k);
    const std::size_t at = static_cast<std::size_t>(e) * words + (t >> 5);
    const int pos = grouped_position(g.offsets[e], prefix[at], membership[at], t);
    REQUIRE(pos >= 0);
    REQUIRE(pos < pairs);
    g.sorted_pairs[pos] = i;
    g.pair_position[i] = pos;
  }
  return g;
}

// k distinct experts a token, uniformly or skewed onto a few experts.
std::vector<int> random_ids(std::mt19937& rng, int m, int experts, int k, bool skewed) {
  std::vector<int> ids;
  std::vector<int> all(experts);
  std::iota(all.begin(), all.end(), 0);
  for (int t = 0; t < m; ++t) {
    if (skewed) std::shuffle(all.begin(), all.begin() + std::min(experts, k + 2), rng);
    else std::shuffle(all.begin(), all.end(), rng);
    ids.insert(ids.end(), all.begin(), all.begin() + k);
  }
  return ids;
}

}  // namespace

TEST_CASE("the grouping over the grid places every pair where a stable sort by expert does") {
  std::mt19937 rng(20261207);
  struct Shape {
    int experts, shared, k;
  };
  for (const Shape sh : {Shape{128, 0, 8}, Shape{64, 2, 6}, Shape{8, 0, 2}, Shape{32, 1, 4}, Shape{256, 1, 8}})
    for (const int m : {65, 72, 97, 129, 1000, 4099})
      for (const bool skewed : {false, true})
        for (const std::uint8_t poison : {std::uint8_t{0x00}, std::uint8_t{0xA5}}) {
          CAPTURE(sh.experts);
          CAPTURE(m);
          CAPTURE(skewed);
          const std::vector<int> ids = random_ids(rng, m, sh.experts, sh.k, skewed);
          const Grouping g = group_over_grid(ids, m, sh.experts, sh.shared, sh.k, poison);
          const int slots = sh.k + sh.shared, pairs = m * slots;
          auto expert_of = [&](int i) {
            const int t = i / slots, s = i % slots;
            return s < sh.k ? ids[t * sh.k + s] : sh.experts + (s - sh.k);
          };
          std::vector<int> expect(pairs);
          std::iota(expect.begin(), expect.end(), 0);
          std::stable_sort(expect.begin(), expect.end(), [&](int a, int b) { return expert_of(a) < expert_of(b); });
          CHECK(g.sorted_pairs == expect);
          for (int pos = 0; pos < pairs; ++pos) CHECK(g.pair_position[expect[pos]] == pos);
          for (int e = 0; e < sh.experts + sh.shared; ++e) {
            CHECK(g.offsets[e + 1] - g.offsets[e] == g.counts[e]);
            CHECK(g.counts[e] == std::count_if(expect.begin(), expect.end(), [&](int i) { return expert_of(i) == e; }));
          }
        }
}

TEST_CASE("a token tile is one byte of a membership word, in the word's bit order") {
  // Tile y holds tokens 8y .. 8y + 7: byte y % 4 of word y / 4 of the expert's row.
  for (const int words : {3, 64}) {
    for (int tile = 0; tile < 4 * words; ++tile) {
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>(2) * 4 * words, 0);
      bytes[membership_tile_byte(1, tile, words)] = 0x81;  // tokens 8y and 8y + 7
      std::vector<std::uint32_t> w(static_cast<std::size_t>(2) * words);
      std::memcpy(w.data(), bytes.data(), bytes.size());
      const int t_first = kRouteTokens * tile, t_last = t_first + 7;
      for (int i = 0; i < 2 * words; ++i) {
        const std::uint32_t want = i == words + t_first / 32 ? (1u << (t_first % 32)) | (1u << (t_last % 32)) : 0u;
        CHECK(w[i] == want);
      }
    }
  }
}

TEST_CASE("the route groups over the grid from 65 tokens, where the last tile's block held every word") {
  CHECK_FALSE(route_groups_in_grid(1));
  CHECK_FALSE(route_groups_in_grid(64));
  CHECK(route_groups_in_grid(65));
  CHECK(route_groups_in_grid(65536));
  // grouped_position: offset, words before, bits below the token in its word.
  CHECK(grouped_position(10, 3, 0b1011u, 0) == 13);
  CHECK(grouped_position(10, 3, 0b1011u, 3) == 15);
  CHECK(grouped_position(0, 0, 0xFFFFFFFFu, 31) == 31);
  CHECK(grouped_position(0, 0, 0xFFFFFFFFu, 63) == 31);  // t % 32 within its word
}

TEST_CASE("the route's blocks share an SM from two blocks an SM") {
  // qwen3-30b-a3b (8 blocks of 16 router rows) on 132 SMs: M = 128 is 128 blocks, one wave;
  // M = 2048 is 2048 blocks.
  CHECK_FALSE(route_blocks_share_an_sm(8LL * 16, 132));
  CHECK_FALSE(route_blocks_share_an_sm(263, 132));
  CHECK(route_blocks_share_an_sm(264, 132));
  CHECK(route_blocks_share_an_sm(8LL * 256, 132));
  CHECK(route_blocks_share_an_sm(8LL * 65535, 132));  // no overflow at the largest grid
}
