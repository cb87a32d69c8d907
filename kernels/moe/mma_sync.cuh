#pragma once
// mma.sync.m16n8k16 with bf16 operands and fp32 accumulation (sm_80 and newer), on the
// fragments of expert_mma_fragments.hpp: the one tensor-core instruction of the mma and stream
// expert GEMM families, and the int4 group step both run on it.
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/moe/expert_mma_fragments.hpp"

namespace moe::kernels {

__device__ __forceinline__ void mma_16816(float (&d)[4], const expert_mma::AFragment& a, const expert_mma::BFragment& b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
#else
  (void)d, (void)a, (void)b;
  __trap();
#endif
}

// A 16-byte load as the four 32-bit registers the fragments take.
__device__ __forceinline__ void copy_words(std::uint32_t (&w)[4], const uint4& v) {
  w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
}

// One 128-k group of a 16-row int4 tile into acc, for chunks 0 .. live - 1: the lane's two
// vectors of codes (rows n and n + 8) dequantised half a group at a time, each half's 4 A
// fragments used by every chunk; the group's sums scaled in fp32, as the reference does
// (`scales`: rows n and n + 8, bf16 low and high). load_x(x, ch, w) gives the lane's 8
// activations of word w (0..3) of its 32 k for chunk ch, zeros where it has none.
template <int kChunks, class LoadX>
__device__ __forceinline__ void int4_group_mma(float (&acc)[kChunks][4], const std::uint32_t (&rn)[4],
                                               const std::uint32_t (&rn8)[4], std::uint32_t scales, int live,
                                               const LoadX& load_x) {
  float d[kChunks][4];
#pragma unroll
  for (int ch = 0; ch < kChunks; ++ch) d[ch][0] = d[ch][1] = d[ch][2] = d[ch][3] = 0.f;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    expert_mma::AFragment a[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = expert_mma::int4_a(rn, rn8, 4 * half + i);
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      if (ch >= live) break;
#pragma unroll
      for (int w = 0; w < 2; ++w) {
        std::uint32_t x[4];
        load_x(x, ch, 2 * half + w);
        mma_16816(d[ch], a[2 * w], expert_mma::int4_b(x, 4 * half + 2 * w));
        mma_16816(d[ch], a[2 * w + 1], expert_mma::int4_b(x, 4 * half + 2 * w + 1));
      }
    }
  }
  const float sn = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(scales & 0xFFFFu)));
  const float sn8 = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(scales >> 16)));
#pragma unroll
  for (int ch = 0; ch < kChunks; ++ch) {
    acc[ch][0] = fmaf(d[ch][0], sn, acc[ch][0]);
    acc[ch][1] = fmaf(d[ch][1], sn, acc[ch][1]);
    acc[ch][2] = fmaf(d[ch][2], sn8, acc[ch][2]);
    acc[ch][3] = fmaf(d[ch][3], sn8, acc[ch][3]);
  }
}

}  // namespace moe::kernels
