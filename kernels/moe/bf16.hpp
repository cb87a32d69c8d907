#pragma once
// bf16 <-> float by bit manipulation, identical on host and device, so a value generated on
// the GPU and one derived by the CPU reference round the same way (round to nearest even).
#include <cuda_runtime_api.h>  // __host__ __device__ __forceinline__ for host compilers too

#include <cstdint>
#include <cstring>

namespace moe::kernels {

__host__ __device__ __forceinline__ std::uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

__host__ __device__ __forceinline__ float bits_float(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// The float a bf16 bit pattern stands for (exact: bf16 is the top half of a float).
__host__ __device__ __forceinline__ float bf16_bits_to_float(std::uint16_t b) {
  return bits_float(std::uint32_t{b} << 16);
}

// float -> bf16 bits, round to nearest, ties to even; NaN stays a (quiet) NaN, infinities and
// overflow go to infinity as IEEE rounding says.
__host__ __device__ __forceinline__ std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

// float rounded through bf16 and back: what the GPU stores when it writes bf16.
__host__ __device__ __forceinline__ float round_to_bf16(float f) {
  return bf16_bits_to_float(float_to_bf16_bits(f));
}

// The NaN pattern tests poison outputs with (0xFFFF: a negative quiet NaN in bf16 and, as a
// 32-bit word 0xFFFFFFFF, in float too).
constexpr std::uint16_t kBf16PoisonBits = 0xFFFFu;

}  // namespace moe::kernels
