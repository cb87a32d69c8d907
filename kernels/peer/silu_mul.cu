#include "kernels/peer/silu_mul.hpp"

#include <algorithm>

#include "common/cuda_check.hpp"
#include "kernels/moe/bf16.hpp"

namespace moe::kernels::peer {

namespace {

__global__ void silu_mul_kernel(const std::uint16_t* __restrict__ gate_up, std::int64_t rows,
                                int inter, std::uint16_t* __restrict__ h) {
  const std::int64_t n = rows * inter;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / inter;
    const int j = static_cast<int>(i - r * inter);
    const std::uint16_t* row = gate_up + r * 2 * inter;
    const float g = bf16_bits_to_float(row[j]), u = bf16_bits_to_float(row[inter + j]);
    h[i] = float_to_bf16_bits(g / (1.0f + expf(-g)) * u);
  }
}

}  // namespace

void silu_mul(const __nv_bfloat16* gate_up, std::int64_t rows, int inter, __nv_bfloat16* h,
              cudaStream_t stream) {
  const std::int64_t n = rows * inter;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 4096));
  silu_mul_kernel<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const std::uint16_t*>(gate_up),
                                                   rows, inter, reinterpret_cast<std::uint16_t*>(h));
  MOE_CHECK_LAUNCH("silu_mul_kernel");
}

}  // namespace moe::kernels::peer
