#include "kernels/moe/weights_checksum.hpp"

#include <cstring>

#include "common/cuda_check.hpp"
#include "kernels/moe/generate.hpp"

namespace moe::kernels {

namespace {

constexpr int kThreads = 256;

struct TensorBytes {
  std::size_t b[kExpertTensors];
};

// One block a (expert, tensor): XOR of the mixed words, reduced over the block.
__global__ void __launch_bounds__(kThreads) expert_checksum_kernel(ExpertTable table, TensorBytes sizes,
                                                                    std::uint64_t* out) {
  const int e = blockIdx.x, t = blockIdx.y;
  const void* const* arrays[kExpertTensors] = {table.gate_up, table.gate_up_scales, table.down, table.down_scales};
  const auto* words = static_cast<const std::uint32_t*>(arrays[t][e]);
  const std::size_t n = words ? sizes.b[t] / 4 : 0;
  std::uint64_t h = 0;
  for (std::size_t i = threadIdx.x; i < n; i += kThreads) h ^= checksum_mix(words[i], i);
  for (int o = 16; o > 0; o >>= 1) h ^= __shfl_xor_sync(0xffffffffu, h, o);
  __shared__ std::uint64_t warp_h[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_h[threadIdx.x >> 5] = h;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint64_t all = 0;
    for (int w = 0; w < kThreads / 32; ++w) all ^= warp_h[w];
    out[static_cast<std::size_t>(e) * kExpertTensors + t] = all;
  }
}

}  // namespace

std::uint64_t checksum_host(const void* data, std::size_t bytes) {
  std::uint64_t h = 0;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes / 4; ++i) {
    std::uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    h ^= checksum_mix(w, i);
  }
  return h;
}

void enqueue_expert_checksums(const MoeDims& dims, const ExpertTable& table, std::uint64_t* out,
                              cudaStream_t stream) {
  const TensorBytes sizes{{expert_weight_bytes(dims, TensorKind::gate_up), expert_scale_bytes(dims, TensorKind::gate_up),
                           expert_weight_bytes(dims, TensorKind::down), expert_scale_bytes(dims, TensorKind::down)}};
  const dim3 grid(static_cast<unsigned>(dims.total_experts()), kExpertTensors);
  expert_checksum_kernel<<<grid, kThreads, 0, stream>>>(table, sizes, out);
  MOE_CHECK_LAUNCH("expert_checksum_kernel");
}

}  // namespace moe::kernels
