#include "common/cuda_check.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/launch.cuh"

namespace moe::kernels::ep {

namespace {

// Block t: token t's partials from every rank, in rank order, then its shared experts.
__global__ void combine_returned_kernel(CombineArgs a) {
  const int t = blockIdx.x, P = a.wire.ranks, H = a.wire.hidden;
  for (int n = threadIdx.x; n < H; n += blockDim.x) {
    float acc = 0.0f;
    for (int d = 0; d < P; ++d) {
      const int row = a.row_of[t * P + d];
      if (row < 0 || row >= a.wire.capacity) continue;
      const float* p = reinterpret_cast<const float*>(a.combine_recv + a.wire.combine_block_bytes * d +
                                                      a.wire.header_bytes + a.wire.combine_row_bytes * row);
      acc += p[n];
    }
    if (a.shared) acc += a.shared[static_cast<std::size_t>(t) * H + n];
    reinterpret_cast<std::uint16_t*>(a.out)[static_cast<std::size_t>(t) * H + n] = detail::to_bf16_bits(acc);
  }
}

}  // namespace

void preload_combine_returned_kernel() {
  detail::load_kernel(combine_returned_kernel, "combine_returned_kernel");
}

void enqueue_combine_returned(const CombineArgs& a, cudaStream_t stream) {
  if (a.m < 1) return;
  combine_returned_kernel<<<a.m, 256, 0, stream>>>(a);
  MOE_CHECK_LAUNCH("combine_returned_kernel");
}

}  // namespace moe::kernels::ep
