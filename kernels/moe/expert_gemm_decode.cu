// Stages 2 and 3 for small M (the decode path): SIMT kernels that stream each active expert's
// weights once per chunk of 8 of its tokens.
//
// Work split: block b serves active expert b / blocks_per_expert and a slice of its output
// rows; a grid of resident blocks (every SM, as many as fit) walks these items, so every SM
// streams some expert's rows even when only a handful of experts is active, and no block pays
// a launch per item. The host does not know how many experts are active (routing stays on the
// device): the route stage pads the active list with -1 and blocks stop at the first -1 item.
// Each warp owns kRows weight rows; per K segment each lane issues all its 16-byte weight
// loads before using any (16 in flight per lane), and before the activations are staged. The
// expert's tokens (or pair rows of h) are staged in shared memory per K segment and shared by
// all warps of the block.
// The down kernel can be launched with programmatic dependent launch (set_programmatic_launch):
// it then fetches its first weights while gate_up is still finishing, and waits for h.
//
// Measured on an H200 (bench in tests/gpu/test_moe_kernels.cu): this version reaches 35-70% of
// the read ceiling at M=1 (bf16); the time per item is dominated by the serial chain (expert
// id -> weights -> staging barrier -> math -> reduction), so the next step is software
// pipelining the weight loads of item i+1 under the math of item i. A variant with per-warp
// items and no shared-memory staging (activations read through L1) measured 5-30% slower.
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
constexpr int kTokenChunk = 8;  // tokens sharing one pass over the weights
constexpr int kSegment = 2048;  // K elements staged per step (32 KB of activations)

template <WeightFormat F>
struct DecodeTraits;
template <>
struct DecodeTraits<WeightFormat::bf16> {
  static constexpr int kRows = 2;         // weight rows per warp
  static constexpr int kElemsPerVec = 8;  // bf16 per 16-byte load
};
template <>
struct DecodeTraits<WeightFormat::int4> {
  static constexpr int kRows = 4;
  static constexpr int kElemsPerVec = 32;  // int4 codes per 16-byte load
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
  constexpr int kVecsPerLane = kSegment / T::kElemsPerVec / 32;
  // gate_up: a warp's rows are kRows/2 gate rows and the matching up rows (output columns
  // col0 .. col0 + kRows/2); down: kRows output rows.
  constexpr int kOutPerWarp = kGateUp ? kRows / 2 : kRows;
  __shared__ __align__(16) std::uint16_t staged[kTokenChunk][kSegment];

  // gate_up reads the routing of the kernel before it; down reads only the active list (whose
  // writer finished before gate_up let down start) until it waits for h below.
  bool waited = false;
  if (kGateUp) {
    detail::grid_dependency_wait();
    waited = true;
  }
  detail::allow_dependent_launch();

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int K = p.k_len;
  const int vecs_per_row = K / T::kElemsPerVec;
  const int groups = int4_groups(K);

  for (int item = blockIdx.x;; item += gridDim.x) {
    const int a = item / p.items_per_expert;
    if (a >= p.total_experts) break;
    const int e = __ldcg(p.active + a);
    if (e < 0) break;  // uniform per block: no barrier is skipped by part of a block
    const int col0 = ((item % p.items_per_expert) * kWarps + warp) * kOutPerWarp;
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
    if (!waited) {
      detail::grid_dependency_wait();
      waited = true;
    }
    const int p0 = p.offsets[e], p1 = p.offsets[e + 1];

    for (int c0 = p0; c0 < p1; c0 += kTokenChunk) {
      const int tc = min(kTokenChunk, p1 - c0);
      float acc[kRows][kTokenChunk];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < kTokenChunk; ++t) acc[r][t] = 0.f;

      for (int k0 = 0; k0 < K; k0 += kSegment) {
        if (c0 != p0 || k0 != 0) load_weights(k0);
        const int seg = min(kSegment, K - k0);
        const int seg_vecs8 = seg / 8;
        __syncthreads();  // previous segment fully consumed
        for (int i = threadIdx.x; i < tc * seg_vecs8; i += kThreads) {
          const int t = i / seg_vecs8, v = i % seg_vecs8;
          const std::size_t src_row = kGateUp ? static_cast<std::size_t>(p.sorted_pairs[c0 + t] / p.slots)
                                              : static_cast<std::size_t>(c0 + t);
          const uint4* src = reinterpret_cast<const uint4*>(p.input + src_row * K + k0) + v;
          // x is read-only for the whole forward; h was just written by gate_up (which may
          // still have been running when this kernel started, under PDL): read it at L2.
          reinterpret_cast<uint4*>(&staged[t][0])[v] = kGateUp ? __ldg(src) : __ldcg(src);
        }
        __syncthreads();

        const int seg_vecs = seg / T::kElemsPerVec;
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i) {
          const int v = lane + 32 * i;
          if (v >= seg_vecs) break;
          if constexpr (F == WeightFormat::bf16) {
#pragma unroll
            for (int t = 0; t < kTokenChunk; ++t) {
              if (t < tc) {
                const uint4 xv = reinterpret_cast<const uint4*>(&staged[t][0])[v];
#pragma unroll
                for (int r = 0; r < kRows; ++r) acc[r][t] = detail::dot8_bf16(w[r][i], xv, acc[r][t]);
              }
            }
          } else {
            // Dequantise the 32 codes once, reuse them for every token of the chunk.
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
              float qf[32];
              const std::uint32_t words[4] = {w[r][i].x, w[r][i].y, w[r][i].z, w[r][i].w};
#pragma unroll
              for (int j = 0; j < 32; ++j) qf[j] = nibble_to_float(words[j / 8], j % 8);
#pragma unroll
              for (int t = 0; t < kTokenChunk; ++t) {
                if (t < tc) {
                  const uint4* xv = reinterpret_cast<const uint4*>(&staged[t][v * 32]);
                  float s = 0.f;
#pragma unroll
                  for (int q = 0; q < 4; ++q) {
                    const uint4 x4 = xv[q];
                    const std::uint32_t xw[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
                    for (int h = 0; h < 4; ++h) {
                      s = fmaf(qf[q * 8 + 2 * h], detail::bf16_lo(xw[h]), s);
                      s = fmaf(qf[q * 8 + 2 * h + 1], detail::bf16_hi(xw[h]), s);
                    }
                  }
                  acc[r][t] = fmaf(s, wscale[r][i], acc[r][t]);
                }
              }
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
  }
}

template <WeightFormat F, bool kGateUp>
void launch_decode_format(const DecodeParams& p, long long max_items, cudaStream_t stream) {
  auto kernel = decode_expert_gemm_kernel<F, kGateUp>;
  const long long resident = detail::resident_blocks(kernel, kThreads);
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min(max_items, resident)));
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
  const int out_per_item = kWarps * (kGateUp ? rows / 2 : rows);
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
