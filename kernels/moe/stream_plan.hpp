#pragma once
// The plan of the streaming expert GEMM (expert_gemm_stream.cu, gemm=stream): which bytes a
// stage holds, which consumer warp owns which unit-pass, and which stages each block streams.
// Host and device share every function here; the CPU tests (tests/cpu/test_stream_plan.cpp)
// run them to show that every weight byte of a layer is streamed exactly once a pass, by
// exactly one block, into the ring of exactly one consumer warp, and read by exactly one lane.
//
// Work. A *unit* is one or two adjacent 16-row tiles of one active expert (int4_mma_layout.hpp's
// tiles: gate_up pairs gate rows 8t.. with their up rows, down takes output rows 16t..); a
// *unit-pass* is a unit for one pass of up to 8 kChunks of its tokens; a *stage* is a unit-pass
// over one K segment. Two tiles a unit (int4, where unit_tiles says) halve the activation bytes
// a warp loads a weight byte: each 16-byte activation load feeds 32 weight rows, not 16. A phase
// (the shared experts, which need no routing; then the routed ones) has U = sum over its
// entries of units * passes unit-passes; block b of G takes the unit-passes [U b / G,
// U (b + 1) / G), entry-major, then unit, then pass (a unit's passes are adjacent, so a second
// pass reads the unit from L2). Every unit-pass has the same bytes, so every block
// streams the same bytes within one unit-pass.
//
// Warps. The block's unit-passes, counted on across its two phases, are dealt to the consumer
// warps in turn (the d-th to warp d % 8), each warp with a ring of its own: a warp owns its
// unit-pass from the first segment to the epilogue, sums it in its registers in segment order
// (deterministic) and stores it, with no other warp to wait for. The producer fills the rings
// a wave at a time: segment s of each of up to 8 unit-passes, then segment s + 1.
//
// Stages. Both formats are read in layouts where a tile's stages are contiguous and in the
// order the owning warp's lanes read them, so a stage is one bulk copy of its codes (and, int4,
// one of its scales): bf16 16 rows x up to 256 k (8 KB, bf16_stream_layout.hpp's stage
// tiles); int4 up to 8 groups of 128 k (8 KB, int4_stream_layout.hpp's tiles), or up to 4
// groups of each of a unit's two tiles (one copy of codes and one of scales a tile).
#include <cstddef>
#include <cstdint>

#include "kernels/moe/bf16_stream_layout.hpp"
#include "kernels/moe/host_device.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_layout.hpp"

namespace moe::kernels::stream {

constexpr int kConsumerWarps = 8;
constexpr int kWarps = kConsumerWarps + 1;  // the last warp is the producer
constexpr int kThreads = 32 * kWarps;
constexpr int kTileRows = int4_mma_layout::kTileRows;

constexpr int kBf16SegmentK = bf16_stream_layout::kSegmentK;  // k a bf16 stage: 8 blocks of 32 k
constexpr int kBf16SegmentBlocks = kBf16SegmentK / 32;
constexpr int kInt4SegmentGroups = 8;          // 128-k groups an int4 stage
constexpr int kInt4GroupBytes = 1024;          // a full group of a tile's codes
constexpr int kInt4ScaleBytes = 2 * kTileRows; // a group's scales of a tile

// Bytes of one slot: the largest stage (and, int4, its scales after the codes).
constexpr int kBf16SlotBytes = kTileRows * 2 * kBf16SegmentK;                         // 8,192
constexpr int kInt4CodeBytes = kInt4SegmentGroups * kInt4GroupBytes;                  // 8,192
constexpr int kInt4SlotBytes = kInt4CodeBytes + kInt4ScaleBytes * kInt4SegmentGroups;  // 8,448
// Slots of each consumer warp's ring: one being read, one in flight (8 warps: 132 KB of ring,
// several times what the read rate times the read latency asks). A third slot a warp measured
// slower: the shared memory it takes comes out of L1, where the activations are read.
constexpr int kSlotsPerWarp = 2;
constexpr int kSlots = kConsumerWarps * kSlotsPerWarp;
// The largest dynamic shared memory of a block (sm_90: 227 KB).
constexpr int kMaxSmemBytes = 227 * 1024;

constexpr int slot_bytes(bool int4) { return int4 ? kInt4SlotBytes : kBf16SlotBytes; }

// The consumer warp that owns the block's d-th unit-pass, and the slot and phase parity of the
// i-th item of warp w's ring.
MOE_HD int owner_warp(int d) { return d % kConsumerWarps; }
MOE_HD int ring_slot(int w, int i) { return w * kSlotsPerWarp + i % kSlotsPerWarp; }
MOE_HD unsigned ring_parity(int i) { return static_cast<unsigned>(i / kSlotsPerWarp) & 1u; }

// A stage's place in K and its bytes, for a matrix with reduction length k_len whose units
// hold `tiles` tiles (2: int4 only).
struct Segments {
  int k_len;
  bool int4;
  int tiles = 1;

  // int4: the groups of one tile a stage holds (a slot holds 8 groups in all).
  MOE_HD int stage_groups() const { return kInt4SegmentGroups / tiles; }
  MOE_HD int count() const {
    return int4 ? (int4_groups(k_len) + stage_groups() - 1) / stage_groups()
                : (k_len + kBf16SegmentK - 1) / kBf16SegmentK;
  }
  // bf16: k of segment s; int4: groups of segment s.
  MOE_HD int first(int s) const { return s * (int4 ? stage_groups() : kBf16SegmentK); }
  MOE_HD int length(int s) const {
    const int total = int4 ? int4_groups(k_len) : k_len, left = total - first(s);
    const int full = int4 ? stage_groups() : kBf16SegmentK;
    return left < full ? left : full;
  }
  // The codes of the stage (bf16: its values) within each of its tiles: one contiguous run in
  // both layouts (the last group of an int4 row may be partial).
  MOE_HD int code_offset(int s) const { return int4 ? kInt4GroupBytes * first(s) : 2 * kTileRows * first(s); }
  MOE_HD int code_bytes(int s) const {
    if (!int4) return 2 * kTileRows * length(s);
    const int tile_bytes = kTileRows * k_len / 2, end = kInt4GroupBytes * (first(s) + length(s));
    return (end < tile_bytes ? end : tile_bytes) - code_offset(s);
  }
  // int4: whether every group of segment s is whole (128 k: every lane of a warp has codes).
  MOE_HD bool whole_groups(int s) const { return kInt4Group * (first(s) + length(s)) <= k_len; }
  // int4: the scales of the stage's groups of one tile.
  MOE_HD int scale_bytes(int s) const { return kInt4ScaleBytes * length(s); }
  // The bytes the stage's copies bring, every tile's (the full barrier's transaction count).
  MOE_HD std::uint32_t stage_bytes(int s) const {
    return static_cast<std::uint32_t>(int4 ? tiles * (code_bytes(s) + scale_bytes(s)) : code_bytes(s));
  }
  // int4: a slot's groups are numbered tile-major: group j of the stage's tile u is slot group
  // slot_group(u, j), which the offsets below take.
  MOE_HD int slot_group(int u, int j) const { return u * stage_groups() + j; }
  // int4: where tile u of the unit puts its codes and its scales in the slot.
  MOE_HD int tile_codes_at(int u) const { return kInt4GroupBytes * stage_groups() * u; }
  MOE_HD int tile_scales_at(int u) const { return kInt4CodeBytes + kInt4ScaleBytes * stage_groups() * u; }
};

// Byte offsets in a bf16 slot of lane (n, c)'s 16 bytes of tile row n + 8 half in 32-k block b
// of the segment (bf16_stream_layout.hpp); in an int4 slot, of its vector (half, n, c) of tile
// u's group j of the segment, and of its scale pair (rows n and n + 8) of slot group sj. A warp
// reads every block (group) of the stage it owns.
MOE_HD int bf16_slot_offset(int b, int half, int n, int c) { return 16 * ((2 * b + half) * 32 + 4 * n + c); }
MOE_HD int int4_slot_offset(const Segments& g, int s, int j, int half, int n, int c, int u = 0) {
  const int quads = int4_mma_layout::group_quads(g.k_len, g.first(s) + j);
  return g.tile_codes_at(u) + kInt4GroupBytes * j + 16 * (half * 8 * quads + n * quads + c);
}
// The same offset of slot group sj in a stage of whole groups (4 vectors a row each): no division.
MOE_HD int int4_whole_slot_offset(int sj, int half, int n, int c) { return kInt4GroupBytes * sj + 16 * (32 * half + 4 * n + c); }
MOE_HD int int4_scale_slot_offset(int sj, int n) { return kInt4CodeBytes + kInt4ScaleBytes * sj + 4 * n; }

// Passes of an entry with `pairs` pairs at `pass_tokens` tokens a pass (at least one: an entry
// listed as active has a pair; a count the scratch lost is streamed once, never skipped).
MOE_HD int passes_of(int pairs, int pass_tokens) { return pairs <= pass_tokens ? 1 : (pairs + pass_tokens - 1) / pass_tokens; }

// 16-row tiles of one expert's weights: gate_up pairs gate rows 8t.. with their up rows, so
// inter / 8; down hidden / 16.
MOE_HD int expert_tiles(bool gate_up, int hidden, int inter) { return gate_up ? inter / 8 : hidden / kTileRows; }

// Tiles a unit of an int4 layer at m tokens: two where a pass has two chunks (m > 8) and the
// routed experts expect two tokens or more each (m top_k >= 2 E), when an expert's tiles pair
// up. There the activations' loads through L1 set the time and a unit of two tiles halves them
// (mixtral-8x7b M = 32 on an H200: 1.28x); with fewer tokens an expert the units, half as many,
// load the warps unevenly (docs/design/kernels.md, "Two tiles a unit").
MOE_HD int unit_tiles(bool int4, int m, int top_k, int experts, int tiles) {
  return int4 && m > 8 && m * top_k >= 2 * experts && tiles % 2 == 0 ? 2 : 1;
}

// Block `block` of `blocks` takes unit-passes [share_begin(b), share_begin(b + 1)) of a phase of
// `units` unit-passes.
MOE_HD long long share_begin(long long units, int block, int blocks) { return units * block / blocks; }

// A place in a phase's walk: entry, unit-pass within the entry (unit-major).
struct Place {
  int entry;
  int unit_pass;  // unit = unit_pass / passes, pass = unit_pass % passes
};

// The unit-pass after `p` in a phase whose entry p.entry has `unit_passes` unit-passes (the
// next entry's first past its last one).
MOE_HD Place next_place(Place p, int unit_passes) {
  if (++p.unit_pass < unit_passes) return p;
  return {p.entry + 1, 0};
}

// What one ring item is. kStage: a stage of weights; kRoutedBegin (gate_up): the shared
// experts are done, the routed ones follow (the warp waits for the route before it reads its
// pairs); kEnd: the ring's last item.
enum ItemKind : int { kStage, kRoutedBegin, kEnd };

struct Header {
  int kind;
  int first_pair;  // the entry's first pair in sorted order
  int t0, tn;      // the pass's first token (of the entry) and its token count
  int tile;  // the unit's first tile
  int segment;
  int last;    // the unit-pass's last segment: the epilogue follows
  int shared;  // a shared expert: its pairs are tokens 0 .. m - 1 in order
};

// The block's dynamic shared memory, in this order: the rings' slots (kSlotsPerWarp a consumer
// warp, 128-byte aligned, as the copies' destinations must be 16), their headers and their
// full and empty barriers.
struct SmemLayout {
  int slot_bytes;

  MOE_HD std::size_t headers() const { return static_cast<std::size_t>(slot_bytes) * kSlots; }
  MOE_HD std::size_t barriers() const { return headers() + sizeof(Header) * kSlots; }
  MOE_HD std::size_t bytes() const { return barriers() + 2 * sizeof(std::uint64_t) * kSlots; }
};

}  // namespace moe::kernels::stream
