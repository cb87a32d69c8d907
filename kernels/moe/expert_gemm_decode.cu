// Stages 2 and 3 for small M (the decode path): SIMT kernels that stream each active expert's
// weights once per chunk of 8 of its tokens.
//
// Work split: block b serves active expert b / blocks_per_expert and a slice of its output
// rows, so every SM streams some expert's rows even when only a handful of experts is active.
// The host does not know how many experts are active (routing stays on the device), so the
// grid covers the worst case and blocks past num_active exit at once.
// Each warp owns kRows weight rows; per K segment each lane issues all its 16-byte weight
// loads before using any (16 in flight per lane). The expert's tokens (or pair rows of h) are
// staged in shared memory per K segment and shared by all warps.
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_format.hpp"

namespace moe::kernels {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTokenChunk = 8;      // tokens sharing one pass over the weights
constexpr int kSegment = 2048;      // K elements staged per step (32 KB of activations)

template <WeightFormat F>
struct DecodeTraits;
template <>
struct DecodeTraits<WeightFormat::bf16> {
  static constexpr int kRows = 2;                          // weight rows per warp
  static constexpr int kElemsPerVec = 8;                   // bf16 per 16-byte load
};
template <>
struct DecodeTraits<WeightFormat::int4> {
  static constexpr int kRows = 8;
  static constexpr int kElemsPerVec = 32;                  // int4 codes per 16-byte load
};

struct DecodeParams {
  const void* const* weights;  // per expert
  const void* const* scales;   // per expert (int4)
  const __nv_bfloat16* input;  // gate_up: x [m, H]; down: h [pairs, I] in sorted order
  int k_len;                   // reduction length: H for gate_up, I for down
  int out_rows;                // output columns: I for gate_up (row pairs), H for down
  int slots;
  int blocks_per_expert;
  const int* offsets;
  const int* active;
  const int* num_active;
  const int* sorted_pairs;
  __nv_bfloat16* h_out;  // gate_up
  float* down_out;       // down
};

template <WeightFormat F, bool kGateUp>
__global__ void __launch_bounds__(kThreads) decode_expert_gemm_kernel(DecodeParams p) {
  using T = DecodeTraits<F>;
  constexpr int kRows = T::kRows;
  constexpr int kVecsPerLane = kSegment / T::kElemsPerVec / 32;
  // gate_up: a warp's rows are kRows/2 gate rows and the matching up rows (output columns
  // j0 .. j0 + kRows/2); down: kRows output rows.
  constexpr int kOutPerWarp = kGateUp ? kRows / 2 : kRows;
  __shared__ __align__(16) std::uint16_t staged[kTokenChunk][kSegment];

  const int a = blockIdx.x / p.blocks_per_expert;
  if (a >= *p.num_active) return;  // uniform per block: no syncs skipped by part of a block
  const int e = p.active[a];
  const int p0 = p.offsets[e], p1 = p.offsets[e + 1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int col0 = ((blockIdx.x % p.blocks_per_expert) * kWarps + warp) * kOutPerWarp;
  const int K = p.k_len;
  const int vecs_per_row = K / T::kElemsPerVec;

  const uint4* wbase = static_cast<const uint4*>(p.weights[e]);
  const std::uint16_t* sbase = F == WeightFormat::int4 ? static_cast<const std::uint16_t*>(p.scales[e]) : nullptr;
  const int groups = int4_groups(K);
  int row_of[kRows];
  bool row_ok[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int c = col0 + (kGateUp ? r % kOutPerWarp : r);
    row_ok[r] = c < p.out_rows;
    row_of[r] = kGateUp && r >= kOutPerWarp ? p.out_rows + c : c;
  }

  for (int c0 = p0; c0 < p1; c0 += kTokenChunk) {
    const int tc = min(kTokenChunk, p1 - c0);
    float acc[kRows][kTokenChunk];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int t = 0; t < kTokenChunk; ++t) acc[r][t] = 0.f;

    for (int k0 = 0; k0 < K; k0 += kSegment) {
      const int seg = min(kSegment, K - k0);
      const int seg_vecs8 = seg / 8;
      __syncthreads();  // previous segment fully consumed
      for (int i = threadIdx.x; i < tc * seg_vecs8; i += kThreads) {
        const int t = i / seg_vecs8, v = i % seg_vecs8;
        const std::size_t src_row =
            kGateUp ? static_cast<std::size_t>(p.sorted_pairs[c0 + t] / p.slots) : static_cast<std::size_t>(c0 + t);
        reinterpret_cast<uint4*>(&staged[t][0])[v] =
            __ldg(reinterpret_cast<const uint4*>(p.input + src_row * K + k0) + v);
      }
      __syncthreads();

      // All weight loads of the segment first, then the math.
      uint4 w[kRows][kVecsPerLane];
      const int seg_vecs = seg / T::kElemsPerVec;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i) {
          const int v = lane + 32 * i;
          if (row_ok[r] && v < seg_vecs)
            w[r][i] = __ldcs(wbase + static_cast<std::size_t>(row_of[r]) * vecs_per_row +
                             k0 / T::kElemsPerVec + v);
          else
            w[r][i] = make_uint4(0, 0, 0, 0);
        }
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
          const int group = (k0 + v * 32) / kInt4Group;
          float scale[kRows];
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            scale[r] = row_ok[r] ? __bfloat162float(__ushort_as_bfloat16(
                                       __ldg(sbase + static_cast<std::size_t>(row_of[r]) * groups + group)))
                                 : 0.f;
#pragma unroll
          for (int t = 0; t < kTokenChunk; ++t) {
            if (t < tc) {
              const uint4* xv = reinterpret_cast<const uint4*>(&staged[t][v * 32]);
              const uint4 x0 = xv[0], x1 = xv[1], x2 = xv[2], x3 = xv[3];
#pragma unroll
              for (int r = 0; r < kRows; ++r) {
                float s = detail::dot8_int4(w[r][i].x, x0, 0.f);
                s = detail::dot8_int4(w[r][i].y, x1, s);
                s = detail::dot8_int4(w[r][i].z, x2, s);
                s = detail::dot8_int4(w[r][i].w, x3, s);
                acc[r][t] = fmaf(s, scale[r], acc[r][t]);
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
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.active = l.at<int>(s, l.active_experts);
  p.num_active = l.at<int>(s, l.num_active);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.h_out = l.at<__nv_bfloat16>(s, l.h);
  p.down_out = l.at<float>(s, l.down_out);
  const int rows = d.format == WeightFormat::bf16 ? DecodeTraits<WeightFormat::bf16>::kRows
                                                  : DecodeTraits<WeightFormat::int4>::kRows;
  const int out_per_block = kWarps * (kGateUp ? rows / 2 : rows);
  p.blocks_per_expert = (p.out_rows + out_per_block - 1) / out_per_block;
  // Worst case of active experts: every routed one any pair could pick, plus the shared ones.
  const long long max_active =
      std::min<long long>(d.experts, static_cast<long long>(a.m) * d.top_k) + d.shared;
  const long long blocks = max_active * p.blocks_per_expert;
  if (blocks > 0x7FFFFFFFLL)
    throw Error(ExitCode::probe_error, "decode gemm: grid of " + std::to_string(blocks) + " blocks too large");
  if (d.format == WeightFormat::bf16) {
    decode_expert_gemm_kernel<WeightFormat::bf16, kGateUp><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  } else {
    decode_expert_gemm_kernel<WeightFormat::int4, kGateUp><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  }
  MOE_CHECK_LAUNCH("decode_expert_gemm_kernel");
}

}  // namespace

void enqueue_gate_up_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<true>(a, l, stream);
}

void enqueue_down_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<false>(a, l, stream);
}

}  // namespace moe::kernels
