// Stage 4: out[t] = sum over slots s = 0 .. k+S-1, in that order, of w[t, s] * y[pair(t, s)]
// (routed: the top-k weight, or 1 under scale_input; shared: 1, or the shared gate),
// fp32, rounded once to bf16. y is down's rows, fp32 or bf16 (ForwardOptions::down_rows). Each
// output element is owned by one thread and summed in a fixed order, so the result is the same
// bits on every run (no atomics).
#include "common/cuda_check.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

constexpr int kThreads = 256;

// Elements 8v .. 8v + 7 of a down row of `hidden` elements, fp32 or bf16, as floats.
template <bool kBf16Rows>
__device__ __forceinline__ void load_row8(const float* down_out, std::size_t row, int hidden, int v,
                                          float4 (&y)[2]) {
  if constexpr (kBf16Rows) {
    const auto* bf16_row = reinterpret_cast<const __nv_bfloat16*>(down_out) + row * hidden;
    const uint4 b = reinterpret_cast<const uint4*>(bf16_row)[v];
    y[0] = make_float4(detail::bf16_lo(b.x), detail::bf16_hi(b.x), detail::bf16_lo(b.y), detail::bf16_hi(b.y));
    y[1] = make_float4(detail::bf16_lo(b.z), detail::bf16_hi(b.z), detail::bf16_lo(b.w), detail::bf16_hi(b.w));
  } else {
    const float4* r = reinterpret_cast<const float4*>(down_out + row * hidden + v * 8);
    y[0] = r[0];
    y[1] = r[1];
  }
}

// kPlain: routed slots by their top-k weight, shared slots 1 (every plain-routing shape: the
// kernel as it was); else the shared gate and scale_input's unweighted routed slots apply.
template <bool kPlain, bool kBf16Rows>
__global__ void __launch_bounds__(kThreads)
    combine_kernel(const float* down_out, const float* topk_weights, const int* pair_position,
                   const float* shared_gate, bool routed_unweighted, int hidden, int top_k, int slots,
                   int m, __nv_bfloat16* out) {
  // The next layer's route may be scheduled now: it prefetches its router rows and waits for
  // this grid before it reads x or scratch.
  detail::allow_dependent_launch();
  detail::grid_dependency_wait();  // launched early (PDL) behind the down kernel
  const int vecs = hidden / 8;  // 8 outputs (one 16-byte store) per thread
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= static_cast<long long>(m) * vecs) return;
  const int t = static_cast<int>(i / vecs), v = static_cast<int>(i % vecs);
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  // The shared slots' weight: 1, or the token's shared gate (Qwen2-MoE). Routed slots weigh 1
  // where the weight scaled the expert's input instead (Llama-4). One load a thread, outside
  // the slot loop.
  const float shared_w = !kPlain && shared_gate ? shared_gate[t] : 1.0f;
  // kChunk slots at a time: their positions and weights, then their rows, are loaded before any
  // is used, so a token pays two round trips to L2 per chunk, not two per slot (M=1 on an
  // H200: 2.5 us for the kernel, on every layer's critical path). The sum keeps slot order.
  constexpr int kChunk = 8;
  for (int s0 = 0; s0 < slots; s0 += kChunk) {
    float w[kChunk];
    int pos[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int s = min(s0 + j, slots - 1);  // past the end: a repeat whose product is skipped
      w[j] = s < top_k ? (!kPlain && routed_unweighted ? 1.0f : topk_weights[t * top_k + s]) : shared_w;
      pos[j] = detail::clamp_index(pair_position[t * slots + s], 0, m * slots - 1);
    }
    float4 y[kChunk][2];
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      load_row8<kBf16Rows>(down_out, static_cast<std::size_t>(pos[j]), hidden, v, y[j]);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      if (s0 + j < slots) {
        acc[0] = fmaf(w[j], y[j][0].x, acc[0]);
        acc[1] = fmaf(w[j], y[j][0].y, acc[1]);
        acc[2] = fmaf(w[j], y[j][0].z, acc[2]);
        acc[3] = fmaf(w[j], y[j][0].w, acc[3]);
        acc[4] = fmaf(w[j], y[j][1].x, acc[4]);
        acc[5] = fmaf(w[j], y[j][1].y, acc[5]);
        acc[6] = fmaf(w[j], y[j][1].z, acc[6]);
        acc[7] = fmaf(w[j], y[j][1].w, acc[7]);
      }
    }
  }
  std::uint32_t packed[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    packed[j] = detail::to_bf16_bits(acc[2 * j]) | (static_cast<std::uint32_t>(detail::to_bf16_bits(acc[2 * j + 1])) << 16);
  reinterpret_cast<uint4*>(out)[static_cast<std::size_t>(t) * vecs + v] =
      make_uint4(packed[0], packed[1], packed[2], packed[3]);
}

}  // namespace

void preload_combine_kernels() {
  detail::load_kernel(combine_kernel<true, false>, "combine_kernel");
  detail::load_kernel(combine_kernel<false, false>, "combine_kernel<gated or scaled>");
  detail::load_kernel(combine_kernel<true, true>, "combine_kernel<bf16 rows>");
  detail::load_kernel(combine_kernel<false, true>, "combine_kernel<gated or scaled, bf16 rows>");
}

void enqueue_combine(const MoeForwardArgs& a, const ScratchLayout& l, bool bf16_rows, cudaStream_t stream) {
  const long long items = static_cast<long long>(a.m) * (a.dims.hidden / 8);
  const unsigned blocks = static_cast<unsigned>((items + kThreads - 1) / kThreads);
  const bool plain = !a.dims.shared_gate && !a.dims.scale_input;
  const auto kernel = bf16_rows ? (plain ? combine_kernel<true, true> : combine_kernel<false, true>)
                                : (plain ? combine_kernel<true, false> : combine_kernel<false, false>);
  detail::launch(kernel, dim3(blocks), dim3(kThreads), 0, stream, a.options.programmatic_launch,
                 "combine_kernel", static_cast<const float*>(l.at<float>(a.scratch, l.down_out)),
                 static_cast<const float*>(l.at<float>(a.scratch, l.topk_weights)),
                 static_cast<const int*>(l.at<int>(a.scratch, l.pair_position)),
                 a.dims.shared_gate ? static_cast<const float*>(l.at<float>(a.scratch, l.shared_gate)) : nullptr,
                 a.dims.scale_input, a.dims.hidden,
                 a.dims.top_k, l.slots, a.m, a.out);
}

}  // namespace moe::kernels
