#pragma once
// A consumer warp of the streaming expert GEMM. For every ring item: wait for the slot, copy
// its part of the stage to registers (stream_plan.hpp: bf16 32-k blocks 2w, 2w + 1; int4 group
// w), release the slot, then multiply on mma.m16n8k16 with the weights as the 16-row A operand
// and each chunk of 8 tokens as B (the fragments and k maps of expert_mma_fragments.hpp); the
// activations come from L1/L2 (x is read by every tile of the layer, h by every tile of down).
// At a unit-pass's last segment the 8 warps' partial sums meet in shared memory and are added
// in warp order, then stored: gate_up h = silu(gate) * up (bf16), down y (fp32).
#include <cuda_bf16.h>

#include "kernels/moe/device_math.cuh"
#include "kernels/moe/launch.cuh"
#include "kernels/moe/mma_sync.cuh"
#include "kernels/moe/stage_ring.cuh"
#include "kernels/moe/stream_params.cuh"

namespace moe::kernels::stream {

constexpr int kPartialsBarrier = 1;  // named barriers of the consumer warps (0 is __syncthreads)
constexpr int kTokensBarrier = 2;
constexpr int kConsumerThreads = 32 * kConsumerWarps;

template <bool kInt4, bool kGateUp, int kChunks>
struct Consumer {
  static constexpr int kSlots = slots_for(kInt4);
  const Params& p;
  Smem& sm;
  const Segments seg;
  const int warp, lane;
  float acc[kChunks][4];
  const uint4* x_row[kChunks];  // the lane's token of each chunk, null past the pass's tokens
  int buffer = 0;               // which buffer of partial sums the next epilogue uses

  __device__ Consumer(const Params& params, Smem& s)
      : p(params), sm(s), seg{params.k_len, kInt4}, warp(threadIdx.x >> 5), lane(threadIdx.x & 31) {}

  // The activation row of a pass's token `tok` (its position in the entry: t0 + tok).
  __device__ int input_row(const Header& h, int tok) const {
    const int pos = h.first_pair + h.t0 + tok;
    if constexpr (!kGateUp) return pos;  // h rows are in sorted order
    if (h.shared) return h.t0 + tok;
    if (pos < p.token_table) return sm.tokens[pos];
    return detail::clamp_index(__ldcg(p.sorted_pairs + pos) / p.slots, 0, p.m - 1);
  }

  __device__ void begin_unit_pass(const Header& h) {
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      acc[ch][0] = acc[ch][1] = acc[ch][2] = acc[ch][3] = 0.f;
      const int tok = ch * 8 + (lane >> 2);
      x_row[ch] = tok < h.tn
                      ? reinterpret_cast<const uint4*>(p.input + static_cast<std::size_t>(input_row(h, tok)) * p.k_len)
                      : nullptr;
    }
  }

  // 8 activations of the lane's token of chunk ch at k (zero past the pass's tokens).
  __device__ void load_x(std::uint32_t (&x)[4], int ch, int k) const {
    if (x_row[ch]) {
      copy_words(x, detail::load_activation<kGateUp>(x_row[ch] + k / 8));
    } else {
      x[0] = x[1] = x[2] = x[3] = 0u;
    }
  }

  // The warp's part of one bf16 stage: blocks [b0, b1) of the segment.
  __device__ void bf16_stage(const unsigned char* slot, const Header& h, int slot_index) {
    const int s = h.segment, b0 = seg.warp_begin(warp), b1 = seg.warp_end(s, warp), n = lane >> 2, c = lane & 3;
    std::uint32_t rn[kBf16BlocksPerWarp][4], rn8[kBf16BlocksPerWarp][4];
#pragma unroll
    for (int j = 0; j < kBf16BlocksPerWarp; ++j)
      if (b0 + j < b1) {
        copy_words(rn[j], *reinterpret_cast<const uint4*>(slot + bf16_slot_offset(seg, s, n, b0 + j, c)));
        copy_words(rn8[j], *reinterpret_cast<const uint4*>(slot + bf16_slot_offset(seg, s, n + 8, b0 + j, c)));
      }
    release(slot_index);
#pragma unroll
    for (int j = 0; j < kBf16BlocksPerWarp; ++j) {
      if (b0 + j >= b1) break;
      const int k = seg.first(s) + 32 * (b0 + j) + 8 * c;
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        if (ch * 8 >= h.tn) break;
        std::uint32_t x[4];
        load_x(x, ch, k);
        mma_16816(acc[ch], expert_mma::bf16_a(rn[j], rn8[j], 0), expert_mma::bf16_b(x, 0));
        mma_16816(acc[ch], expert_mma::bf16_a(rn[j], rn8[j], 1), expert_mma::bf16_b(x, 1));
      }
    }
  }

  // The warp's part of one int4 stage: group w of the segment, dequantised in registers (the
  // codes as 128 + nibble minus 136, exact), its sums scaled in fp32 as the reference does.
  __device__ void int4_stage(const unsigned char* slot, const Header& h, int slot_index) {
    const int s = h.segment, j = warp, n = lane >> 2, c = lane & 3;
    const bool has_group = j < seg.length(s);
    const int g = seg.first(s) + j, quads = has_group ? int4_mma_layout::group_quads(p.k_len, g) : 0;
    std::uint32_t vn[4] = {0u, 0u, 0u, 0u}, vn8[4] = {0u, 0u, 0u, 0u}, scales = 0u;
    if (c < quads) {
      copy_words(vn, *reinterpret_cast<const uint4*>(slot + int4_slot_offset(seg, s, j, 0, n, c)));
      copy_words(vn8, *reinterpret_cast<const uint4*>(slot + int4_slot_offset(seg, s, j, 1, n, c)));
    }
    if (has_group) scales = *reinterpret_cast<const std::uint32_t*>(slot + int4_scale_slot_offset(j, n));
    release(slot_index);
    if (!has_group) return;
    int4_group_mma<kChunks>(acc, vn, vn8, scales, (h.tn + 7) / 8, [&](std::uint32_t(&x)[4], int ch, int w) {
      if (c < quads)
        load_x(x, ch, expert_mma::int4_lane_x_k(g, c, w));
      else
        x[0] = x[1] = x[2] = x[3] = 0u;
    });
  }

  // The warp is done reading the slot: __syncwarp orders every lane's reads before lane 0's
  // arrival, whose release orders them before the copy that next fills the slot.
  __device__ void release(int slot_index) {
    __syncwarp();
    if (lane == 0) ring::arrive(&sm.empty[slot_index]);
  }

  // The unit-pass's sums of the 8 warps, added in warp order, stored by the epilogue.
  __device__ void finish_unit_pass(const Header& h) {
    float* parts = sm.partials + static_cast<std::size_t>(buffer) * kConsumerWarps * kChunks * 4 * 32;
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch)
#pragma unroll
      for (int i = 0; i < 4; ++i) parts[((warp * kChunks + ch) * 4 + i) * 32 + lane] = acc[ch][i];
    ring::sync_threads(kPartialsBarrier, kConsumerThreads);
    buffer ^= 1;  // the next unit-pass writes the other buffer: no second barrier needed
    auto sum = [&](int ch, int i, int l) {
      float v = 0.f;
#pragma unroll
      for (int w = 0; w < kConsumerWarps; ++w) v += parts[((w * kChunks + ch) * 4 + i) * 32 + l];
      return v;
    };
    // Output q: lane l fastest, so a quarter warp reads 8 consecutive partials.
    constexpr int kValues = kGateUp ? 2 : 4;  // gate_up: value i pairs with its up value i + 2
    for (int q = threadIdx.x; q < kChunks * kValues * 32; q += kConsumerThreads) {
      const int l = q % 32, i = q / 32 % kValues, ch = q / 32 / kValues;
      const int tok = ch * 8 + expert_mma::c_col(l, i);
      if (tok >= h.tn) continue;
      const std::size_t pos = static_cast<std::size_t>(h.first_pair + h.t0 + tok);
      const int row = int4_mma_layout::tile_source_row(h.tile, expert_mma::c_row(l, i), kGateUp ? p.paired : 0);
      if constexpr (kGateUp) {
        reinterpret_cast<std::uint16_t*>(p.h_out)[pos * p.out_rows + row] =
            detail::to_bf16_bits(detail::silu(sum(ch, i, l)) * sum(ch, i + 2, l));
      } else {
        p.down_out[pos * p.out_rows + row] = sum(ch, i, l);
      }
    }
  }

  // The routed experts follow: wait for the route, then keep its pairs' tokens at hand.
  __device__ void read_routing() {
    detail::grid_dependency_wait();
    for (int i = threadIdx.x; i < p.token_table; i += kConsumerThreads)
      sm.tokens[i] = detail::clamp_index(__ldcg(p.sorted_pairs + i) / p.slots, 0, p.m - 1);
    ring::sync_threads(kTokensBarrier, kConsumerThreads);
  }

  __device__ void run() {
    if constexpr (!kGateUp) detail::grid_dependency_wait();  // down reads h from its first stage
    for (int item = 0;; ++item) {
      const int slot = item % kSlots;
      ring::wait(&sm.full[slot], (item / kSlots) & 1);
      const Header h = sm.headers[slot];
      if (h.kind == kEnd) return;
      if (h.kind == kRoutedBegin) {
        release(slot);
        read_routing();
        continue;
      }
      if (h.segment == 0) begin_unit_pass(h);
      const unsigned char* bytes = sm.ring + static_cast<std::size_t>(slot) * slot_bytes(kInt4);
      if constexpr (kInt4)
        int4_stage(bytes, h, slot);
      else
        bf16_stage(bytes, h, slot);
      if (h.last) finish_unit_pass(h);
    }
  }
};

}  // namespace moe::kernels::stream
