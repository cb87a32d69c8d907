#if MOEBENCH_HAVE_NCCL_DEVICE_API
#include "common/cuda_check.hpp"
#include "engine/ep/nccl/lsa_copy.hpp"

namespace moe::ep {

namespace {

constexpr int kThreads = 512;

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ncclLsaBarrierSession::wait with a deadline: the same inbox words and epoch (so the barrier
// object stays in step with NCCL's own arrive and its destructor), but a peer that never arrives ends
// the wait at `deadline` instead of spinning forever. True on every thread when all arrived.
__device__ bool wait_until(ncclLsaBarrierSession<ncclCoopCta>& bar, std::uint64_t deadline) {
  bool arrived = true;
  const int n = bar.team.nRanks, me = bar.team.rank;
  for (int i = threadIdx.x; i < n - 1; i += blockDim.x) {
    const int peer = i + (me <= i ? 1 : 0);
    cuda::atomic_ref<std::uint32_t> inbox(*bar.ucInbox(me, peer));
    for (;;) {
      const std::uint32_t got = inbox.load(cuda::memory_order_acquire);
      if (got - (bar.epoch + 1) <= (std::uint32_t(-1) >> 1)) break;
      if (global_ns() > deadline) {
        arrived = false;
        break;
      }
    }
  }
  bar.epoch += 1;
  return __syncthreads_and(arrived) != 0;
}

__global__ void __launch_bounds__(kThreads) lsa_copy_kernel(ncclDevComm comm, ncclWindow_t window,
                                                            LsaCopyArgs a) {
  // A failed exchange before this one: the peers are out of step, skip (the host raises it).
  // Read once for the whole CTA, so that all of its threads take the same way.
  __shared__ unsigned failed;
  if (threadIdx.x == 0) failed = *reinterpret_cast<volatile unsigned*>(a.status);
  __syncthreads();
  if (failed != 0) return;
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), comm, ncclTeamLsa(comm), comm.lsaBarrier,
                                         blockIdx.x);
  bar.arrive(ncclCoopCta(), cuda::memory_order_release);
  if (!wait_until(bar, global_ns() + a.timeout_ns)) {
    if (threadIdx.x == 0) atomicOr(a.status, kLsaEntryTimeout);
    return;
  }
  const int me = comm.rank;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Starting at the next rank spreads the first stores over the peers instead of all ranks
  // writing rank 0 first.
  for (int j = 0; j < a.ranks; ++j) {
    const int d = (me + 1 + j) % a.ranks;
    const int count = *reinterpret_cast<const int*>(a.counts + a.counts_stride * d);
    const std::size_t words = meaningful_block_bytes(a.header_bytes, a.row_bytes, count, a.capacity) / 16;
    const uint4* src = reinterpret_cast<const uint4*>(a.send + a.block_bytes * d);
    uint4* dst = static_cast<uint4*>(ncclGetPeerPointer(window, a.region_offset + a.block_bytes * me, d));
    for (std::size_t i = first; i < words; i += stride) dst[i] = src[i];
  }
  bar.arrive(ncclCoopCta(), cuda::memory_order_release);
  if (!wait_until(bar, global_ns() + a.timeout_ns) && threadIdx.x == 0) atomicOr(a.status, kLsaExitTimeout);
}

}  // namespace

void preload_lsa_copy_kernel() {
  cudaFuncAttributes attributes{};
  MOE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, lsa_copy_kernel));
}

void enqueue_lsa_copy(const ncclDevComm& comm, ncclWindow_t window, const LsaCopyArgs& a,
                      cudaStream_t stream) {
  lsa_copy_kernel<<<kLsaCopyCtas, kThreads, 0, stream>>>(comm, window, a);
  MOE_CHECK_LAUNCH("lsa_copy_kernel");
}

}  // namespace moe::ep
#endif
