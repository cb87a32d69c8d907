#include <cstring>

#include "common/cuda_check.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels::ep {

namespace {

constexpr int kPlanThreads = 256;
constexpr int kMaxRanks = 32;

// One block: tokens in chunks of kPlanThreads, in token order; per destination an exclusive
// scan of "token goes there" (warp ballots, then warp totals) gives each token its record.
__global__ void plan_dispatch_kernel(PackArgs a) {
  __shared__ int s_base[kMaxRanks];
  __shared__ int s_warp[kPlanThreads / 32][kMaxRanks];
  const int P = a.wire.ranks, K = a.wire.top_k, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x < P) s_base[threadIdx.x] = 0;
  __syncthreads();
  for (int t0 = 0; t0 < a.m; t0 += kPlanThreads) {
    const int t = t0 + threadIdx.x;
    unsigned mask = 0;
    if (t < a.m)
      for (int s = 0; s < K; ++s) {
        const int e = a.topk_ids[t * K + s];
        if (e < 0 || e >= a.experts) {
          atomicOr(a.status, kBadExpert);
          continue;
        }
        mask |= 1u << a.owner[e];
      }
    int prefix[kMaxRanks];
    for (int d = 0; d < P; ++d) {
      const unsigned b = __ballot_sync(0xffffffffu, (mask >> d) & 1u);
      prefix[d] = __popc(b & ((1u << lane) - 1u));
      if (lane == 0) s_warp[warp][d] = __popc(b);
    }
    __syncthreads();
    for (int d = 0; d < P; ++d) {
      int before = s_base[d];
      for (int w = 0; w < warp; ++w) before += s_warp[w][d];
      const int row = before + prefix[d];
      if (t < a.m) {
        int slot = -1;
        if ((mask >> d) & 1u) {
          if (row < a.wire.capacity)
            slot = row;
          else
            atomicOr(a.status, kCapacityOverflow);
        }
        a.row_of[t * P + d] = slot;
      }
    }
    __syncthreads();
    if (threadIdx.x < P) {
      int total = 0;
      for (int w = 0; w < kPlanThreads / 32; ++w) total += s_warp[w][threadIdx.x];
      s_base[threadIdx.x] += total;
    }
    __syncthreads();
  }
  if (threadIdx.x < P) {
    int* header = reinterpret_cast<int*>(a.send + a.wire.dispatch_block_bytes * threadIdx.x);
    header[0] = min(s_base[threadIdx.x], a.wire.capacity);  // the count travels with the rows
  }
}

// Block (t, d): token t's record in block d, when it goes there.
__global__ void write_records_kernel(PackArgs a) {
  const int t = blockIdx.x, d = blockIdx.y, P = a.wire.ranks, K = a.wire.top_k;
  const int row = a.row_of[t * P + d];
  if (row < 0) return;
  unsigned char* rec = a.send + a.wire.dispatch_block_bytes * d + a.wire.header_bytes +
                       a.wire.dispatch_row_bytes * row;
  if (threadIdx.x == 0) reinterpret_cast<int*>(rec)[0] = t;
  for (int s = threadIdx.x; s < K; s += blockDim.x) {
    const int e = min(max(a.topk_ids[t * K + s], 0), a.experts - 1);
    reinterpret_cast<int*>(rec + 4)[s] = a.owner[e] == d ? a.local_index[e] : -1;
    reinterpret_cast<float*>(rec + 4 + 4 * K)[s] = a.topk_weights[t * K + s];
  }
  // Hidden row: 16-byte words (H is a multiple of 8, records are 16-byte aligned).
  const uint4* src = reinterpret_cast<const uint4*>(a.x + static_cast<std::size_t>(t) * a.wire.hidden);
  uint4* dst = reinterpret_cast<uint4*>(rec + a.wire.meta_bytes);
  for (int i = threadIdx.x; i < a.wire.hidden / 8; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void preload_pack_dispatch_kernels() {
  detail::load_kernel(plan_dispatch_kernel, "plan_dispatch_kernel");
  detail::load_kernel(write_records_kernel, "write_records_kernel");
}

void enqueue_pack_dispatch(const PackArgs& a, cudaStream_t stream) {
  if (a.wire.ranks < 1 || a.wire.ranks > kMaxRanks)
    throw Error(ExitCode::usage, "pack: ranks must be in 1.." + std::to_string(kMaxRanks));
  if (a.wire.hidden % 8 != 0) throw Error(ExitCode::usage, "pack: hidden must be a multiple of 8");
  if (a.m < 1) return;
  plan_dispatch_kernel<<<1, kPlanThreads, 0, stream>>>(a);
  MOE_CHECK_LAUNCH("plan_dispatch_kernel");
  write_records_kernel<<<dim3(a.m, a.wire.ranks), 128, 0, stream>>>(a);
  MOE_CHECK_LAUNCH("write_records_kernel");
}

}  // namespace moe::kernels::ep
