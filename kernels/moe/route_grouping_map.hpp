#pragma once
// The route's grouping of (token, slot) pairs by expert over the whole grid (route_grouping.cuh),
// host and device, so the CPU suite runs the very placement the kernels use.
//
// Membership words: bit t % 32 of word t / 32 of expert e says token t chose e (shared experts:
// every token). Token tile y (kRouteTokens = 8 tokens) is byte y % 4 of word y / 4, little-endian,
// so the block that ranks a tile writes its byte of every expert's word with a plain store: no
// atomics, no memset, and a word reads back as the four tiles' bytes.
#include <cstddef>
#include <cstdint>

#include "kernels/moe/host_device.hpp"
#include "kernels/moe/route_logits_map.hpp"

namespace moe::kernels {

// A pair's place in sorted_pairs: its expert's offset, the expert's set bits in the words before
// the token's, and those below the token in its word (pairs in token order within an expert).
// The route's grouping and the expert-parallel grouping of received rows both place pairs so.
MOE_HD int grouped_position(int expert_offset, int prefix_of_word, std::uint32_t word, int t) {
  return expert_offset + prefix_of_word + popcount32(word & ((1u << (t & 31)) - 1u));
}

}  // namespace moe::kernels

namespace moe::kernels::route {

constexpr int kGroupThreads = 256;        // the grouping kernels' blocks
constexpr int kGroupWordsWarps = 8;       // experts a block of the word-prefix kernel (a warp each)
constexpr int kGroupPairsPerBlock = 1024; // pairs a block of the placing kernel

// Whether the route groups its pairs over the grid (from this many tokens) rather than in the
// last tile's block: one block grouping every pair grows with the pairs (H100, qwen3-30b-a3b
// M = 8192: a route of 582 us against 3 us of bytes).
constexpr int kGroupInGridFromTokens = 65;
MOE_HD bool route_groups_in_grid(int m) { return m >= kGroupInGridFromTokens; }

static_assert(kRouteTokens * 4 == 32, "four token tiles a membership word");
// The byte of expert e's membership row (4 * bit_words bytes) that token tile y writes.
MOE_HD std::size_t membership_tile_byte(int e, int tile, int bit_words) {
  return static_cast<std::size_t>(e) * 4 * bit_words + tile;
}
}  // namespace moe::kernels::route
