// Stages 2 and 3 for small M (the decode path): SIMT kernels that stream each active expert's
// weights once per chunk of 8 of its tokens.
//
// Work split: an item is (active expert, kOutPerWarp output columns) and belongs to one warp.
// A grid of resident blocks (every SM, as many as fit) walks the items warp by warp, so every
// SM streams some expert's rows however few experts are active, and no block pays a launch per
// item. The host does not know how many experts are active (routing stays on the device): the
// route stage pads the active list with -1 and warps stop at the first -1 item.
// Latency: warps never wait for each other (no barriers): each lane issues all its 16-byte
// weight loads for a K segment (16 in flight) before the index loads and the math, and the
// next item's expert id is fetched while the current item computes. The activations of the
// expert's tokens are read straight from global memory: a few KB that every warp of the SM
// reads, so they stay in L1 (staging them through shared memory needed a block barrier per
// segment, which serialised the warps and halved the bandwidth). The down kernel can be
// launched with programmatic dependent launch: it fetches its first weights while gate_up is
// still finishing, then waits for h.
#include <algorithm>
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

template <WeightFormat F>
struct DecodeTraits;
template <>
struct DecodeTraits<WeightFormat::bf16> {
  static constexpr int kRows = 2;         // weight rows per warp
  static constexpr int kElemsPerVec = 8;  // bf16 per 16-byte load
  static constexpr int kSegment = 2048;   // K elements per step: 8 loads per lane per row
  static constexpr int kTokenChunk = 8;   // tokens sharing one pass over the weights
};
template <>
struct DecodeTraits<WeightFormat::int4> {
  static constexpr int kRows = 2;
  static constexpr int kElemsPerVec = 32;  // int4 codes per 16-byte load
  static constexpr int kSegment = 4096;    // 4 loads per lane per row
  static constexpr int kTokenChunk = 4;    // (register budget: 2 blocks of 256 per SM)
};

struct DecodeParams {
  const void* const* weights;  // per expert
  const void* const* scales;   // per expert (int4)
  const __nv_bfloat16* input;  // gate_up: x [m, H]; down: h [pairs, I] in sorted order
  int k_len;                   // reduction length: H for gate_up, I for down
  int out_rows;                // output columns: I for gate_up (row pairs), H for down
  int slots;
  int total_experts;
  int items_per_expert;
  const int* offsets;
  const int* active;  // padded with -1
  const int* sorted_pairs;
  __nv_bfloat16* h_out;  // gate_up
  float* down_out;       // down
};

// float(q) for nibble n = q + 8: exact, two integer ops and one add.
__device__ __forceinline__ float nibble_to_float(std::uint32_t word, int j) {
  return __uint_as_float(0x4B000000u | ((word >> (4 * j)) & 0xFu)) - 8388616.0f;
}

template <WeightFormat F, bool kGateUp>
__global__ void __launch_bounds__(kThreads, 2) decode_expert_gemm_kernel(DecodeParams p) {
  using T = DecodeTraits<F>;
  constexpr int kRows = T::kRows;
  constexpr int kSegment = T::kSegment;
  constexpr int kTokenChunk = T::kTokenChunk;
  constexpr int kVecsPerLane = kSegment / T::kElemsPerVec / 32;
  // gate_up: a warp's rows are kRows/2 gate rows and the matching up rows (output columns
  // col0 .. col0 + kRows/2); down: kRows output rows.
  constexpr int kOutPerWarp = kGateUp ? kRows / 2 : kRows;

  // gate_up reads the routing of the kernel before it; down reads only the active list (whose
  // writer finished before gate_up let down start) until it waits for h below.
  bool waited = false;
  if (kGateUp) {
    detail::grid_dependency_wait();
    waited = true;
  }
  detail::allow_dependent_launch();

  // x (gate_up) is read-only for the whole forward: read-only cache path. h (down) was just
  // written by gate_up, possibly still running when this kernel started (PDL): read it at L2.
  auto load_input = [](const uint4* ptr) { return kGateUp ? __ldg(ptr) : __ldcg(ptr); };
  const int lane = threadIdx.x & 31;
  const int K = p.k_len;
  const int vecs_per_row = K / T::kElemsPerVec;
  const int groups = int4_groups(K);
  const int warps_total = gridDim.x * kWarps;
  const long long items = static_cast<long long>(p.total_experts) * p.items_per_expert;

  int item = blockIdx.x * kWarps + (threadIdx.x >> 5);
  int e = item < items ? __ldcg(p.active + item / p.items_per_expert) : -1;
  while (e >= 0) {
    const int col0 = (item % p.items_per_expert) * kOutPerWarp;
    const uint4* wbase = static_cast<const uint4*>(p.weights[e]);
    const std::uint16_t* sbase =
        F == WeightFormat::int4 ? static_cast<const std::uint16_t*>(p.scales[e]) : nullptr;
    int row_of[kRows];
    bool row_ok[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int c = col0 + (kGateUp ? r % kOutPerWarp : r);
      row_ok[r] = c < p.out_rows;
      row_of[r] = kGateUp && r >= kOutPerWarp ? p.out_rows + c : c;
    }

    uint4 w[kRows][kVecsPerLane];
    float wscale[kRows][kVecsPerLane];
    auto load_weights = [&](int k0) {
      const int seg_vecs = min(kSegment, K - k0) / T::kElemsPerVec;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i) {
          const int v = lane + 32 * i;
          const bool ok = row_ok[r] && v < seg_vecs;
          w[r][i] = ok ? __ldcs(wbase + static_cast<std::size_t>(row_of[r]) * vecs_per_row +
                                k0 / T::kElemsPerVec + v)
                       : make_uint4(0, 0, 0, 0);
          if constexpr (F == WeightFormat::int4)
            wscale[r][i] = ok ? __bfloat162float(__ushort_as_bfloat16(
                                    __ldg(sbase + static_cast<std::size_t>(row_of[r]) * groups +
                                          (k0 + v * 32) / kInt4Group)))
                              : 0.f;
        }
    };

    load_weights(0);  // in flight while the routing indices and activations arrive
    // The next item's expert, fetched now so the next iteration does not start with a stall.
    const int next_item = item + warps_total;
    const int next_e = next_item < items ? __ldcg(p.active + next_item / p.items_per_expert) : -1;
    if (!waited) {
      detail::grid_dependency_wait();
      waited = true;
    }
    const int p0 = p.offsets[e], p1 = p.offsets[e + 1];

    for (int c0 = p0; c0 < p1; c0 += kTokenChunk) {
      const int tc = min(kTokenChunk, p1 - c0);
      // Lane t holds the input row of the chunk's token t.
      int my_row = 0;
      if (lane < tc) my_row = kGateUp ? p.sorted_pairs[c0 + lane] / p.slots : c0 + lane;
      int in_row[kTokenChunk];  // 32-bit row indices: pointers would cost twice the registers
#pragma unroll
      for (int t = 0; t < kTokenChunk; ++t) in_row[t] = __shfl_sync(0xffffffffu, my_row, t);

      float acc[kRows][kTokenChunk];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < kTokenChunk; ++t) acc[r][t] = 0.f;

      for (int k0 = 0; k0 < K; k0 += kSegment) {
        if (c0 != p0 || k0 != 0) load_weights(k0);
        const int seg_vecs = min(kSegment, K - k0) / T::kElemsPerVec;
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i) {
          const int v = lane + 32 * i;
          if (v >= seg_vecs) break;
          if constexpr (F == WeightFormat::bf16) {
#pragma unroll
            for (int t = 0; t < kTokenChunk; ++t) {
              if (t < tc) {
                const uint4 xv = load_input(reinterpret_cast<const uint4*>(
                    p.input + static_cast<std::size_t>(in_row[t]) * K + k0) + v);
#pragma unroll
                for (int r = 0; r < kRows; ++r) acc[r][t] = detail::dot8_bf16(w[r][i], xv, acc[r][t]);
              }
            }
          } else {
            // Dequantise each packed word (8 codes) once, reuse it for every token of the chunk.
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
              float s[kTokenChunk];
#pragma unroll
              for (int t = 0; t < kTokenChunk; ++t) s[t] = 0.f;
              const std::uint32_t words[4] = {w[r][i].x, w[r][i].y, w[r][i].z, w[r][i].w};
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                float qf[8];
#pragma unroll
                for (int j = 0; j < 8; ++j) qf[j] = nibble_to_float(words[q], j);
#pragma unroll
                for (int t = 0; t < kTokenChunk; ++t) {
                  if (t < tc) {
                    const uint4 x4 = load_input(reinterpret_cast<const uint4*>(
                        p.input + static_cast<std::size_t>(in_row[t]) * K + k0 + v * 32) + q);
                    const std::uint32_t xw[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
                    for (int h = 0; h < 4; ++h) {
                      s[t] = fmaf(qf[2 * h], detail::bf16_lo(xw[h]), s[t]);
                      s[t] = fmaf(qf[2 * h + 1], detail::bf16_hi(xw[h]), s[t]);
                    }
                  }
                }
              }
#pragma unroll
              for (int t = 0; t < kTokenChunk; ++t) acc[r][t] = fmaf(s[t], wscale[r][i], acc[r][t]);
            }
          }
        }
      }

      // Epilogue: reduce across the warp (fixed butterfly order), lane 0 writes.
#pragma unroll
      for (int t = 0; t < kTokenChunk; ++t) {
        if (t < tc) {
          float v[kRows];
#pragma unroll
          for (int r = 0; r < kRows; ++r) v[r] = detail::warp_sum(acc[r][t]);
          if (lane == 0) {
            const std::size_t pr = static_cast<std::size_t>(c0 + t);
            if constexpr (kGateUp) {
#pragma unroll
              for (int r = 0; r < kOutPerWarp; ++r)
                if (row_ok[r]) {
                  const float hv = detail::silu(v[r]) * v[r + kOutPerWarp];
                  reinterpret_cast<std::uint16_t*>(p.h_out)[pr * p.out_rows + col0 + r] = detail::to_bf16_bits(hv);
                }
            } else {
#pragma unroll
              for (int r = 0; r < kRows; ++r)
                if (row_ok[r]) p.down_out[pr * p.out_rows + col0 + r] = v[r];
            }
          }
        }
      }
    }
    item = next_item;
    e = next_e;
  }
}

template <WeightFormat F, bool kGateUp>
void launch_decode_format(const DecodeParams& p, long long max_items, cudaStream_t stream) {
  auto kernel = decode_expert_gemm_kernel<F, kGateUp>;
  const long long resident = detail::resident_blocks(kernel, kThreads);
  const long long blocks_for_items = (max_items + kWarps - 1) / kWarps;
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min(blocks_for_items, resident)));
  detail::launch(kernel, dim3(grid), dim3(kThreads), 0, stream, /*programmatic=*/true,
                 "decode_expert_gemm_kernel", p);
}

template <bool kGateUp>
void launch_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  const MoeDims& d = a.dims;
  DecodeParams p{};
  void* s = a.scratch;
  p.weights = kGateUp ? a.experts.gate_up : a.experts.down;
  p.scales = kGateUp ? a.experts.gate_up_scales : a.experts.down_scales;
  p.input = kGateUp ? a.x : l.at<__nv_bfloat16>(s, l.h);
  p.k_len = kGateUp ? d.hidden : d.inter;
  p.out_rows = kGateUp ? d.inter : d.hidden;
  p.slots = l.slots;
  p.total_experts = d.total_experts();
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.active = l.at<int>(s, l.active_experts);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.h_out = l.at<__nv_bfloat16>(s, l.h);
  p.down_out = l.at<float>(s, l.down_out);
  const int rows = d.format == WeightFormat::bf16 ? DecodeTraits<WeightFormat::bf16>::kRows
                                                  : DecodeTraits<WeightFormat::int4>::kRows;
  const int out_per_item = kGateUp ? rows / 2 : rows;  // one warp's columns
  p.items_per_expert = (p.out_rows + out_per_item - 1) / out_per_item;
  // Worst case of active experts: every routed one any pair could pick, plus the shared ones.
  const long long max_active =
      std::min<long long>(d.experts, static_cast<long long>(a.m) * d.top_k) + d.shared;
  const long long max_items = max_active * p.items_per_expert;
  if (d.format == WeightFormat::bf16)
    launch_decode_format<WeightFormat::bf16, kGateUp>(p, max_items, stream);
  else
    launch_decode_format<WeightFormat::int4, kGateUp>(p, max_items, stream);
}

}  // namespace

void enqueue_gate_up_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<true>(a, l, stream);
}

void enqueue_down_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<false>(a, l, stream);
}

}  // namespace moe::kernels
