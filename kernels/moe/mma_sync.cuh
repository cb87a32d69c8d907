#pragma once
// mma.sync.m16n8k16 with bf16 operands and fp32 accumulation (sm_80 and newer), on the
// fragments of expert_mma_fragments.hpp: the one tensor-core instruction of the mma and stream
// expert GEMM families.
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

}  // namespace moe::kernels
