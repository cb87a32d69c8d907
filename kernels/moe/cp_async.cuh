#pragma once
// 16-byte global -> shared copies on the LSU's asynchronous path (cp.async, sm_80 and newer),
// used by the tensor-core tile kernels. Below sm_80 they do nothing: those kernels are never
// launched there.
#include <cstdint>

namespace moe::kernels::detail {

// Copies 16 bytes, or writes 16 zero bytes when !valid (src is then not read but must be a
// valid address).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace moe::kernels::detail
