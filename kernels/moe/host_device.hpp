#pragma once
// MOE_HD marks a small function that host and device code share (fragment maps, layouts): the
// CPU tests run the very functions the kernels do.
#if defined(__CUDACC__)
#define MOE_HD __host__ __device__ __forceinline__
#else
#define MOE_HD inline
#endif

#include <cstdint>

namespace moe::kernels {

// Set bits of a word, one instruction on either side.
MOE_HD int popcount32(std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}

}  // namespace moe::kernels
