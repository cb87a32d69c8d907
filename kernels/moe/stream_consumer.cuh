#pragma once
// A consumer warp of the streaming expert GEMM. It owns the unit-passes the producer deals it
// (stream_plan.hpp) and reads only its own ring. For every stage: wait for the slot, issue the
// stage's activation loads (x is read by every tile of the layer, h by every tile of down:
// L1/L2), copy the stage to registers (int4: a group ahead), release the slot, multiply on
// mma.m16n8k16 with the weights as the 16-row A operand (int4: of each tile of the unit, with
// the activations loaded once for both) and each chunk of 8 tokens as B (the fragments and k
// maps of expert_mma_fragments.hpp; int4 in the stream tiles, whose codes pair with the
// activations as loaded). The sums stay in the warp's registers over the
// unit-pass's segments, in segment order, and the warp stores them itself: gate_up
// h = silu(gate) * up (bf16), down y (fp32). No warp waits for another.
#include <cuda_bf16.h>

#include "kernels/moe/device_math.cuh"
#include "kernels/moe/launch.cuh"
#include "kernels/moe/mma_sync.cuh"
#include "kernels/moe/stage_ring.cuh"
#include "kernels/moe/stream_params.cuh"

namespace moe::kernels::stream {

template <bool kInt4, bool kGateUp, int kChunks, int kTiles>
struct Consumer {
  static_assert(kTiles == 1 || (kInt4 && kTiles == 2), "two tiles a unit: int4 only");
  const Params& p;
  Smem& sm;
  const Segments seg;
  const int warp, lane, n, c;
  float acc[kTiles][kChunks][4];
  // The lane's token row of each chunk; past the pass's tokens, its first token's row: the
  // mma's columns are independent and those columns are never stored, so no load needs a test.
  const uint4* x_row[kChunks];

  __device__ Consumer(const Params& params, Smem& s)
      : p(params),
        sm(s),
        seg{params.k_len, kInt4, kTiles},
        warp(threadIdx.x >> 5),
        lane(threadIdx.x & 31),
        n(lane >> 2),
        c(lane & 3) {}

  // The activation row of a pass's token `tok` (its position in the entry: t0 + tok).
  __device__ int input_row(const Header& h, int tok) const {
    const int pos = h.first_pair + h.t0 + tok;
    if constexpr (!kGateUp) return pos;  // h rows are in sorted order
    if (h.shared) return h.t0 + tok;
    return detail::clamp_index(__ldcg(p.sorted_pairs + pos) / p.slots, 0, p.m - 1);
  }

  __device__ void begin_unit_pass(const Header& h) {
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
#pragma unroll
      for (int u = 0; u < kTiles; ++u) acc[u][ch][0] = acc[u][ch][1] = acc[u][ch][2] = acc[u][ch][3] = 0.f;
      const int tok = ch * 8 + n < h.tn ? ch * 8 + n : 0;
      x_row[ch] = reinterpret_cast<const uint4*>(p.input + static_cast<std::size_t>(input_row(h, tok)) * p.k_len);
    }
  }

  __device__ const unsigned char* slot_at(int slot) const {
    return sm.ring + static_cast<std::size_t>(slot) * slot_bytes(kInt4);
  }

  // 8 activations of the lane's token of chunk ch at k (a multiple of 8).
  __device__ void load_x(std::uint32_t (&x)[4], int ch, int k) const {
    copy_words(x, detail::load_activation<kGateUp>(x_row[ch] + (static_cast<unsigned>(k) >> 3)));
  }

  // One bf16 stage: up to 8 blocks of 32 k, rows n and n + 8 of each.
  __device__ void bf16_stage(const Header& h, int slot) {
    const int s = h.segment, blocks = seg.length(s) / 32;
    std::uint32_t x[kBf16SegmentBlocks][kChunks][4];
#pragma unroll
    for (int b = 0; b < kBf16SegmentBlocks; ++b)
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch)
        if (b < blocks && ch * 8 < h.tn) load_x(x[b][ch], ch, seg.first(s) + expert_mma::bf16_lane_k(b, c));
    const unsigned char* bytes = slot_at(slot);
    std::uint32_t rn[kBf16SegmentBlocks][4], rn8[kBf16SegmentBlocks][4];
#pragma unroll
    for (int b = 0; b < kBf16SegmentBlocks; ++b)
      if (b < blocks) {
        copy_words(rn[b], *reinterpret_cast<const uint4*>(bytes + bf16_slot_offset(b, 0, n, c)));
        copy_words(rn8[b], *reinterpret_cast<const uint4*>(bytes + bf16_slot_offset(b, 1, n, c)));
      }
    release(slot);
#pragma unroll
    for (int b = 0; b < kBf16SegmentBlocks; ++b) {
      if (b >= blocks) break;
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        if (ch * 8 >= h.tn) break;
        mma_16816(acc[0][ch], expert_mma::bf16_a(rn[b], rn8[b], 0), expert_mma::bf16_b(x[b][ch], 0));
        mma_16816(acc[0][ch], expert_mma::bf16_a(rn[b], rn8[b], 1), expert_mma::bf16_b(x[b][ch], 1));
      }
    }
  }

  // What the lane multiplies for group j of segment s: of each tile, its two vectors of codes
  // and its scale pair from the slot; its activations of the live chunks.
  struct Group {
    std::uint32_t vn[kTiles][4], vn8[kTiles][4], scales[kTiles];
    std::uint32_t x[kChunks][4][4];
  };
  // kWhole: every group of the stage is 128 k, so every lane has codes and the offsets are
  // constants. Otherwise a lane past a partial group's codes takes zero activations, which
  // zero whatever its (zeroed) codes make of them. A chunk past the live ones is neither
  // loaded nor multiplied.
  template <bool kWhole, int kLive>
  __device__ void load_group(Group& gr, const unsigned char* bytes, int s, int j, int live) const {
    const int g = seg.first(s) + j;
    const bool has = kWhole || c < int4_mma_layout::group_quads(p.k_len, g);
#pragma unroll
    for (int ch = 0; ch < kLive; ++ch)
      if (ch == 0 || ch < live)
#pragma unroll
        for (int w = 0; w < 4; ++w)
          if (has)
            load_x(gr.x[ch][w], ch, expert_mma::int4_lane_x_k(g, c, w));
          else
            gr.x[ch][w][0] = gr.x[ch][w][1] = gr.x[ch][w][2] = gr.x[ch][w][3] = 0u;
#pragma unroll
    for (int u = 0; u < kTiles; ++u) {
      const int sj = seg.slot_group(u, j);
      if (has) {
        const int v0 = kWhole ? int4_whole_slot_offset(sj, 0, n, c) : int4_slot_offset(seg, s, j, 0, n, c, u);
        const int v1 = kWhole ? int4_whole_slot_offset(sj, 1, n, c) : int4_slot_offset(seg, s, j, 1, n, c, u);
        copy_words(gr.vn[u], *reinterpret_cast<const uint4*>(bytes + v0));
        copy_words(gr.vn8[u], *reinterpret_cast<const uint4*>(bytes + v1));
      } else {
        gr.vn[u][0] = gr.vn[u][1] = gr.vn[u][2] = gr.vn[u][3] = 0u;
        gr.vn8[u][0] = gr.vn8[u][1] = gr.vn8[u][2] = gr.vn8[u][3] = 0u;
      }
      gr.scales[u] = *reinterpret_cast<const std::uint32_t*>(bytes + int4_scale_slot_offset(sj, n));
    }
  }

  // One group into acc: of each tile, its A fragments dequantised (one LOP3 and one bf16x2
  // subtraction a register, int4_mma_fragments.hpp) half a group at a time and used by every
  // live chunk, 8 mma steps a chunk (expert_mma_fragments.hpp's stream-tile map: B is the
  // activations as loaded), the sums scaled in fp32 as the reference does. With one tile, even
  // and odd steps sum into separate accumulators (two mma chains in flight, not one; two tiles
  // are two chains). No test between steps: a branch there puts a warp synchronisation before
  // every mma and keeps the scheduler from overlapping them.
  template <int kLive>
  __device__ void group_mma(const Group& gr, int live) {
    constexpr int kChains = kTiles == 1 ? 2 : 1;
    float d[kTiles][kLive][kChains][4] = {};
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int u = 0; u < kTiles; ++u) {
        expert_mma::AFragment a[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = expert_mma::int4_a(gr.vn[u], gr.vn8[u], 4 * half + i);
#pragma unroll
        for (int ch = 0; ch < kLive; ++ch)
          if (ch == 0 || ch < live) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const int st = 4 * half + i;
              mma_16816(d[u][ch][i % kChains], a[i], expert_mma::int4_stream_b(gr.x[ch][st / 2], st));
            }
          }
      }
#pragma unroll
    for (int u = 0; u < kTiles; ++u) {
      const float sn = __uint_as_float(gr.scales[u] << 16), sn8 = __uint_as_float(gr.scales[u] & 0xFFFF0000u);
#pragma unroll
      for (int ch = 0; ch < kLive; ++ch)
        if (ch == 0 || ch < live)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float sum = kChains == 2 ? d[u][ch][0][i] + d[u][ch][kChains - 1][i] : d[u][ch][0][i];
            acc[u][ch][i] = fmaf(sum, i < 2 ? sn : sn8, acc[u][ch][i]);
          }
    }
  }

  // One int4 stage: up to 8 groups of one tile, or 4 of each of two. With one live chunk, a
  // full stage of whole groups (every stage but K's last, when K is not a multiple of 1024) is
  // unrolled with no test between its groups (with two chunks' activations that schedule
  // spills registers).
  __device__ void int4_stage(const Header& h, int slot) {
    constexpr int kStageGroups = kInt4SegmentGroups / kTiles;
    if (!seg.whole_groups(h.segment))
      int4_groups<false, 0, kChunks>(h, slot);
    else if ((kChunks == 1 || h.tn <= 8) && seg.length(h.segment) == kStageGroups)
      int4_groups<true, kStageGroups, 1>(h, slot);
    else
      int4_groups<true, 0, kChunks>(h, slot);
  }

  // The groups of a stage (kGroups of them, or 0: the segment's count) for at most kLive live
  // chunks. Group j + 1 is loaded while group j is multiplied (a whole stage in registers would
  // not leave room for two chunks' activations); the slot is released once its last group is
  // loaded.
  template <bool kWhole, int kGroups, int kLive>
  __device__ void int4_groups(const Header& h, int slot) {
    const int s = h.segment, groups = kGroups ? kGroups : seg.length(s), live = (h.tn + 7) / 8;
    const unsigned char* bytes = slot_at(slot);
    Group gr[2];
    load_group<kWhole, kLive>(gr[0], bytes, s, 0, live);
    if (groups == 1) release(slot);
#pragma unroll
    for (int j = 0; j < kInt4SegmentGroups / kTiles; ++j) {
      if (j >= groups) break;
      if (j + 1 < groups) {
        load_group<kWhole, kLive>(gr[(j + 1) & 1], bytes, s, j + 1, live);
        if (j + 2 == groups) release(slot);
      }
      group_mma<kLive>(gr[j & 1], live);
    }
  }

  // The warp is done reading the slot: __syncwarp orders every lane's reads before lane 0's
  // arrival, whose release orders them before the copy that next fills the slot.
  __device__ void release(int slot) {
    __syncwarp();
    if (lane == 0) ring::arrive(&sm.empty[slot]);
  }

  // The unit-pass's sums, stored from the lanes that hold them (C fragment of each tile: rows
  // n, n + 8, tokens 2c, 2c + 1 of each chunk).
  __device__ void finish_unit_pass(const Header& h) const {
#pragma unroll
    for (int u = 0; u < kTiles; ++u)
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch)
#pragma unroll
        for (int i = 0; i < (kGateUp ? 2 : 4); ++i) {  // gate_up: value i pairs with its up value i + 2
          const int tok = ch * 8 + expert_mma::c_col(lane, i);
          if (tok >= h.tn) continue;
          const std::size_t pos = static_cast<std::size_t>(h.first_pair + h.t0 + tok);
          const int row = int4_mma_layout::tile_source_row(h.tile + u, expert_mma::c_row(lane, i), kGateUp ? p.paired : 0);
          if constexpr (kGateUp) {
            reinterpret_cast<std::uint16_t*>(p.h_out)[pos * p.out_rows + row] =
                detail::to_bf16_bits(detail::silu(acc[u][ch][i]) * acc[u][ch][i + 2]);
          } else {
            p.down_out[pos * p.out_rows + row] = acc[u][ch][i];
          }
        }
  }

  __device__ void run() {
    if constexpr (!kGateUp) detail::grid_dependency_wait();  // down reads h from its first stage
    for (int item = 0;; ++item) {
      const int slot = ring_slot(warp, item);
      ring::wait(&sm.full[slot], ring_parity(item));
      const Header h = sm.headers[slot];
      if (h.kind == kEnd) return;
      if (h.kind == kRoutedBegin) {  // the routed experts follow: their pairs need the route
        release(slot);
        detail::grid_dependency_wait();
        detail::allow_dependent_launch();  // down may start: this thread has seen the route
        continue;
      }
      if (h.segment == 0) begin_unit_pass(h);
      if constexpr (kInt4)
        int4_stage(h, slot);
      else
        bf16_stage(h, slot);
      if (h.last) finish_unit_pass(h);
    }
  }
};

}  // namespace moe::kernels::stream
