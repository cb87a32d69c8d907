#pragma once
// What every decode warp shares (expert_gemm_decode.cu): the kernel's parameters and block
// tables, the cursor of a piece, the round-robin deal of units to warps, and the ring that
// streams a warp's pieces. The warp kinds (decode_warp.cuh: SIMT, both formats;
// int4_mma_warp.cuh: int4 on tensor cores) say how a piece is loaded and multiplied.
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/device_math.cuh"

namespace moe::kernels::decode {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxEntries = 1024;        // experts + shared (validated by the route stage)
constexpr int kSmemTokens = 4096;        // pair -> token map kept in shared memory up to here

struct DecodeParams {
  const void* const* weights;  // per expert
  const void* const* scales;   // per expert (int4)
  const __nv_bfloat16* input;  // gate_up: x [m, H]; down: h [pairs, I] in sorted order
  int k_len;                   // reduction length: H for gate_up, I for down
  int out_rows;                // gate_up: I (h columns); down: H
  int units;                   // units per expert (set per piece shape at launch)
  int m, top_k, slots;
  int experts, shared;
  const int* num_active;
  const int* active;  // routed ascending, then shared
  const int* offsets;
  const int* sorted_pairs;
  int shared_warps;      // gate_up: warps 0 .. shared_warps - 1 stream the shared experts
  __nv_bfloat16* h_out;  // gate_up
  float* down_out;       // down
};

// An active expert as the pipeline sees it; entries 0 .. S-1 are the shared experts.
struct Entry {
  const uint4* weights;
  const std::uint16_t* scales;
  int first_pair;  // position of its first pair in sorted order
  int pairs;
};

// Every expert's weight and scale pointers, copied from the resident slot before the
// dependency wait (they do not depend on the routing).
struct ExpertPointers {
  const void* weights[kMaxEntries];
  const void* scales[kMaxEntries];
};

struct BlockTables {
  Entry entries[kMaxEntries];
  union {
    int token_of_pair[kSmemTokens];  // the pairs' tokens by sorted position (gate_up, m > 1)
    ExpertPointers experts;          // one token (kernels with kOneToken)
  };
};
static_assert(sizeof(ExpertPointers) <= sizeof(int) * kSmemTokens, "the one-token tables share token_of_pair's space");

// Where a piece is: active entry, row pair, token chunk, K segment. Kept incrementally (no
// division per piece: at a few hundred instructions per 2 KB piece the kernel is issue
// bound). The walk is the same on every lane, so control flow stays uniform in the warp.
struct PieceCursor {
  int entry;          // -1: past the warp's last piece
  int pair_row;       // unit within the entry: h column (gate_up) or output row pair (down)
  int chunk_segment;  // token chunk << 16 | K segment
  __device__ bool valid() const { return entry >= 0; }
  __device__ int chunk() const { return chunk_segment >> 16; }
  __device__ int segment() const { return chunk_segment & 0xFFFF; }
};

// A warp's place in the walk: its lane, the warps the units are dealt over, the block's tables,
// and how many pieces a unit has per token chunk.
struct DecodeWalk {
  DecodeParams p;
  const BlockTables& tables;
  int lane;
  int stride;         // warps the units are dealt over
  int segments;       // pieces of a unit per token chunk: K segments (int4 mma: scale groups)
  int entry_end = 0;  // entries of the current phase end here

  __device__ DecodeWalk(const DecodeParams& params, const BlockTables& t, int lane_, int stride_, int segments_)
      : p(params), tables(t), lane(lane_), stride(stride_), segments(segments_) {}

  // The activation row a pair reads: its token's x row (gate_up) or its own h row (down).
  template <bool kGateUp>
  __device__ int input_row(const Entry& e, int pair) const {
    const int pos = e.first_pair + pair;
    if constexpr (kGateUp)
      return pos < kSmemTokens ? tables.token_of_pair[pos]
                               : detail::clamp_index(__ldg(p.sorted_pairs + pos) / p.slots, 0, p.m - 1);
    return pos;
  }

  // The next piece: the next segment, else the unit's next chunk of kPassTokens tokens, else
  // the next unit dealt to this warp; entry -1 past the phase's last entry.
  template <int kPassTokens>
  __device__ void advance(PieceCursor& c) const {
    if (c.segment() + 1 < segments) {
      ++c.chunk_segment;
      return;
    }
    const int chunk = c.chunk() + 1;
    if (chunk * kPassTokens < tables.entries[c.entry].pairs) {
      c.chunk_segment = chunk << 16;
      return;
    }
    c.chunk_segment = 0;
    c.pair_row += stride;  // the next unit dealt to this warp
    while (c.pair_row >= p.units) {
      c.pair_row -= p.units;
      ++c.entry;
    }
    if (c.entry >= entry_end) c.entry = -1;
  }
};

// Streams the warp's units from unit index `first` (entry-major) up to entry `end` through a
// ring of Warp::kPiecesInFlight pieces: the oldest is consumed and at once the load of the
// piece that many ahead is issued, so loads (possibly of another expert) fly during the math.
template <class Warp>
__device__ void stream_units(Warp& w, int first, int end) {
  constexpr int kDepth = Warp::kPiecesInFlight;
  w.entry_end = end;
  PieceCursor c{first / w.p.units, first % w.p.units, 0};
  if (c.entry >= end) c.entry = -1;
  typename Warp::Slot ring[kDepth];
  PieceCursor at[kDepth];
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    at[d] = c;
    if (c.valid()) {
      w.issue(ring[d], c);
      w.template advance<Warp::kPassTokens>(c);
    }
  }
  typename Warp::Acc acc;
  for (;;) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (!at[d].valid()) return;
      w.consume(ring[d], at[d], acc);
      at[d] = c;
      if (c.valid()) {
        w.issue(ring[d], c);
        w.template advance<Warp::kPassTokens>(c);
      }
    }
  }
}

// Asks L2 for the weight rows of the warp's units from `first` (entry-major, dealt every
// `stride`) below unit `end`, one 128-byte line a request. down only: a down unit's rows are
// adjacent.
template <class Warp>
__device__ void prefetch_unit_rows(const Warp& w, int first, int end) {
  const int lines = (Warp::kRowsOfUnit * w.vecs_per_row * 16 + 127) / 128;
  for (int u = first; u < end; u += w.stride) {
    const Entry& e = w.tables.entries[u / w.p.units];
    const std::size_t first_row = static_cast<std::size_t>(u % w.p.units) * Warp::kRowsOfUnit;
    const char* rows = reinterpret_cast<const char*>(e.weights + first_row * w.vecs_per_row);
    for (int i = w.lane; i < lines; i += 32) detail::prefetch_l2(rows + static_cast<std::size_t>(i) * 128);
  }
}

// The warp's first unit index >= begin in the round-robin deal (unit u goes to warp u % stride).
__device__ __forceinline__ int first_unit_from(int begin, int warp_id, int stride) {
  const int r = begin % stride;
  return begin - r + warp_id + (warp_id < r ? stride : 0);
}

}  // namespace moe::kernels::decode
