#pragma once
// Where the route's logits on tensor cores (route_logits.cuh) take their operands, host and
// device, so the CPU suite emulates a block's tile with the very maps the kernels use. A tile is
// 16 router rows (mma.m16n8k16's A) by 8 tokens (its B columns); the K range is cut into 32-k
// units dealt to the block's 8 warps in turn; lane (g, q) loads 16 bytes at k = 32 u + 8 q of
// rows g and g + 8 and of token g (expert_mma_fragments.hpp's bf16 map: two k16 steps a unit).
#include "kernels/moe/expert_mma_fragments.hpp"
#include "kernels/moe/host_device.hpp"

namespace moe::kernels::route {

constexpr int kRouteWarps = 8;
constexpr int kRouteTokens = 8;   // a token tile: B's columns
constexpr int kTileExperts = 16;  // router rows a tile: A's rows
constexpr int kUnitK = 32;

// Whether a route sums its logits on tensor cores: from sm_80 and two tokens. At one token a
// tile's B is 1/8 tokens and a cluster block's few rows (mixtral-8x7b: 1) leave most of A
// empty, while each warp's units are a chain of round trips; the SIMT sums there load all of a
// thread's vectors at once (H200, mixtral-8x7b int4 M = 1: route 3.4 us SIMT, 6.8 on the tile).
// Every route kernel of a forward follows the same rule, so they write the same bits.
MOE_HD bool logits_on_tensor_cores(int m, int sm) { return m >= 2 && sm >= 80; }
// Router rows a block of the one-kernel route: a tile on tensor cores, else one (the SIMT sums'
// parallelism is the rows').
MOE_HD int route_block_rows(bool tensor_cores) { return tensor_cores ? kTileExperts : 1; }
// Whether the one-kernel route's blocks share an SM (4 at 64 registers a thread) rather than
// hold one each (168): from two blocks an SM, where its waves, not a block's loads in flight,
// set its time (H100, bf16, route at M = 2048: qwen3-30b-a3b 77 -> 48 us; at M = 128, one wave,
// 4 blocks an SM were 1.6-4.5 us slower).
MOE_HD bool route_blocks_share_an_sm(long long blocks, int sms) { return blocks >= 2LL * sms; }

MOE_HD int logit_units(int hidden) { return (hidden + kUnitK - 1) / kUnitK; }
// The j-th unit of a warp.
MOE_HD int warp_unit(int warp, int j) { return warp + kRouteWarps * j; }
// The first k of lane quad q's vector in unit u.
MOE_HD int unit_lane_k(int u, int q) { return expert_mma::bf16_lane_k(u, q); }
// Row or token i of a tile of n (past n: a repeat of the last, whose sums are never stored).
MOE_HD int tile_member(int i, int n) { return i < n ? i : n - 1; }
// Whether the vector at k holds values (H % 8 == 0: a vector is all in or all out); one past H
// is zeros, so a unit past H adds nothing and nothing beyond a row meets a zero.
MOE_HD bool vector_in_row(int k, int hidden) { return k < hidden; }

}  // namespace moe::kernels::route
