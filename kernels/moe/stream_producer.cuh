#pragma once
// The producer warp of the streaming expert GEMM: walks the block's share of each phase
// (stream_plan.hpp) a wave of up to 8 unit-passes at a time and deals them to the consumer warps
// in turn. Lane w serves warp w's ring: it polls the ring's next slot and, when it is free,
// writes the stage's header and issues its bulk copies, so the 8 rings are filled in parallel
// and one slow warp holds back only its own ring (until the wave ends). It alone reads the route's tables (active list, offsets, weight
// pointers), a chunk of 32 entries at a time, one entry a lane, every index clamped: under a
// forward whose scratch is overwritten (the bugs scratch-regrow reproduces) a stage may read
// wrong weights, never an address outside them.
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/launch.cuh"
#include "kernels/moe/stage_ring.cuh"
#include "kernels/moe/stream_params.cuh"

namespace moe::kernels::stream {

// One entry of a phase as the producer streams it.
struct Entry {
  const unsigned char* weights = nullptr;
  const unsigned char* scales = nullptr;
  int first_pair = 0;
  int pairs = 0;
};

template <bool kInt4, bool kGateUp, int kChunks, int kTiles>
struct Producer {
  static_assert(kTiles == 1 || (kInt4 && kTiles == 2), "two tiles a unit: int4 only");
  static constexpr int kPassTokens = 8 * kChunks;
  const Params& p;
  Smem& sm;
  const Segments seg;
  const int lane;
  const std::uint64_t policy;
  int items = 0;  // lane w < kConsumerWarps: items pushed into warp w's ring so far
  int dealt = 0;  // unit-passes dealt so far, over both phases

  __device__ Producer(const Params& params, Smem& s)
      : p(params), sm(s), seg{params.k_len, kInt4, kTiles}, lane(threadIdx.x & 31), policy(ring::evict_first_policy()) {}

  // Entry i of phase `routed` (0: the shared experts, 1: the routed ones).
  __device__ Entry load_entry(bool routed, int i) const {
    const int total = p.experts + p.shared, pairs = p.m * p.slots;
    int e, first, count;
    if (!routed) {
      e = p.experts + i;
      first = p.m * p.top_k + i * p.m;  // shared pairs follow every routed one, in token order
      count = p.m;
    } else {
      e = detail::clamp_index(__ldcg(p.active + i), 0, total - 1);
      first = detail::clamp_index(__ldcg(p.offsets + e), 0, pairs - 1);
      count = detail::clamp_index(__ldcg(p.offsets + e + 1) - first, 1, pairs - first);
    }
    return {static_cast<const unsigned char*>(p.weights[e]),
            kInt4 ? static_cast<const unsigned char*>(p.scales[e]) : nullptr, first, count};
  }

  // Lane `from`'s entry, in every lane.
  __device__ static Entry broadcast(const Entry& mine, int from) {
    Entry e;
    e.weights = reinterpret_cast<const unsigned char*>(
        __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(mine.weights), from));
    e.scales = reinterpret_cast<const unsigned char*>(
        __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(mine.scales), from));
    e.first_pair = __shfl_sync(0xffffffffu, mine.first_pair, from);
    e.pairs = __shfl_sync(0xffffffffu, mine.pairs, from);
    return e;
  }

  __device__ int unit_passes(const Entry& e) const { return p.tiles / kTiles * passes_of(e.pairs, kPassTokens); }

  // Lane w < kConsumerWarps: whether the next slot of warp w's ring is free; its index.
  __device__ bool next_slot_free(int& slot) const {
    slot = ring_slot(lane, items);
    return ring::test_wait(&sm.empty[slot], ring_parity(items) ^ 1u);
  }

  // An item with no bytes (kRoutedBegin, kEnd), into every consumer warp's ring.
  __device__ void push_marker(int kind) {
    bool pending = lane < kConsumerWarps;
    while (__any_sync(0xffffffffu, pending)) {
      int slot;
      if (pending && next_slot_free(slot)) {
        sm.headers[slot] = Header{kind, 0, 0, 0, 0, 0, 0, 0};
        ring::arrive(&sm.full[slot]);
        ++items;
        pending = false;
      }
    }
  }

  // Stage h.segment of the lane's unit-pass into the free slot of its ring: for each tile of
  // the unit one copy of its codes (bf16: values), contiguous in both layouts, and int4 one of
  // its scales.
  __device__ void push_stage(int slot, const Entry& e, const Header& h) {
    const int s = h.segment;
    unsigned char* dst = sm.ring + static_cast<std::size_t>(slot) * slot_bytes(kInt4);
    sm.headers[slot] = h;
    ring::arrive_expect_bytes(&sm.full[slot], seg.stage_bytes(s));  // announced before any copy lands
    const std::size_t tile_bytes = static_cast<std::size_t>(kTileRows) * p.k_len * (kInt4 ? 1 : 4) / 2;
#pragma unroll
    for (int u = 0; u < kTiles; ++u) {
      const int tile = h.tile + u;
      ring::copy(dst + (kInt4 ? seg.tile_codes_at(u) : 0), e.weights + tile * tile_bytes + seg.code_offset(s),
                 seg.code_bytes(s), &sm.full[slot], policy);
      if constexpr (kInt4)
        ring::copy(dst + seg.tile_scales_at(u),
                   e.scales + (static_cast<std::size_t>(tile) * int4_groups(p.k_len) + seg.first(s)) * kInt4ScaleBytes,
                   seg.scale_bytes(s), &sm.full[slot], policy);
    }
    ++items;
  }

  // Streams the block's share of one phase of `n` entries.
  __device__ void stream_phase(bool routed, int n) {
    // The phase's unit-passes, then the block's share of them. The first chunk's entries are
    // kept: with at most 32 entries (every decode size but the largest M) the walk below needs
    // no second round trip to the route's tables.
    long long total = 0;
    const Entry first_chunk = lane < n ? load_entry(routed, lane) : Entry{};
    for (int base = 0; base < n; base += 32) {
      const Entry e = base == 0 ? first_chunk : base + lane < n ? load_entry(routed, base + lane) : Entry{};
      const int up = base + lane < n ? unit_passes(e) : 0;
      total += static_cast<long long>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(up)));
    }
    const long long lo = share_begin(total, blockIdx.x, gridDim.x), hi = share_begin(total, blockIdx.x + 1, gridDim.x);
    if (lo >= hi) return;
    // The entry holding unit-pass lo: an inclusive scan of each chunk's unit-passes.
    long long before = 0;
    int base = 0;
    Entry mine;  // this lane's entry of the chunk at `base`
    Place at{};
    for (;; base += 32) {
      mine = base == 0 ? first_chunk : base + lane < n ? load_entry(routed, base + lane) : Entry{};
      const int up = base + lane < n ? unit_passes(mine) : 0;
      int incl = up;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
      }
      const unsigned past = __ballot_sync(0xffffffffu, before + incl > lo);
      if (past) {
        const int l = __ffs(past) - 1;
        const int incl_l = __shfl_sync(0xffffffffu, incl, l), up_l = __shfl_sync(0xffffffffu, up, l);
        at = Place{base + l, static_cast<int>(lo - (before + incl_l - up_l))};
        break;
      }
      before += __shfl_sync(0xffffffffu, incl, 31);
    }
    const int segments = seg.count();
    for (long long next = lo; next < hi;) {
      // A wave: unit-pass next + i goes to warp owner_warp(dealt + i), whose lane keeps its
      // entry and place.
      const int wave = static_cast<int>(hi - next < kConsumerWarps ? hi - next : kConsumerWarps);
      Entry my_entry{};
      int my_unit_pass = 0, left = 0;  // left: stages of the lane's unit-pass still to push
      for (int i = 0; i < wave; ++i) {
        if (at.entry >= base + 32) {  // the next chunk of entries
          base += 32;
          mine = base + lane < n ? load_entry(routed, base + lane) : Entry{};
        }
        const Entry e = broadcast(mine, at.entry - base);
        if (lane == owner_warp(dealt + i)) my_entry = e, my_unit_pass = at.unit_pass, left = segments;
        at = next_place(at, unit_passes(e));
      }
      const int passes = passes_of(my_entry.pairs, kPassTokens), t0 = my_unit_pass % passes * kPassTokens;
      Header h{kStage, my_entry.first_pair, t0, min(kPassTokens, my_entry.pairs - t0), my_unit_pass / passes * kTiles, 0,
               0, routed ? 0 : 1};
      while (__any_sync(0xffffffffu, left > 0)) {
        int slot;
        if (left > 0 && next_slot_free(slot)) {
          h.segment = segments - left;
          h.last = left == 1;
          push_stage(slot, my_entry, h);
          --left;
        }
      }
      dealt += wave;
      next += wave;
    }
  }

  __device__ void run() {
    stream_phase(false, p.shared);  // before the wait: the shared experts need no routing
    if constexpr (kGateUp) {
      push_marker(kRoutedBegin);
      detail::grid_dependency_wait();  // the route
      detail::allow_dependent_launch();
    }
    // down: launched only after every gate_up thread waited for the route (see the kernel), so
    // its tables are complete; the weights do not depend on h, only the consumers wait.
    const int routed = detail::clamp_index(__ldcg(p.num_active), p.shared, p.experts + p.shared) - p.shared;
    stream_phase(true, routed);
    push_marker(kEnd);
  }
};

}  // namespace moe::kernels::stream
