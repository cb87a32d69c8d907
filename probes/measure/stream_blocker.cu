#include "probes/measure/stream_blocker.hpp"

#include <atomic>
#include <cstdio>

#include "common/cuda_check.hpp"

namespace moe::measure {

namespace {
constexpr unsigned long long kTimeoutNs = 10ull * 1000 * 1000 * 1000;  // 10 s

__device__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The name is what CUPTI reports; see StreamBlocker::kKernelName.
__global__ void moebench_stream_blocker(volatile int* flag) {
  const unsigned long long start = global_timer_ns();
  while (*flag == 0) {
    if (global_timer_ns() - start > kTimeoutNs) {
      *flag = 2;  // the host never released us: report it rather than hang the stream
      return;
    }
  }
}
}  // namespace

StreamBlocker::StreamBlocker() {
  void* host = nullptr;
  MOE_CUDA_CHECK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  flag_ = static_cast<volatile int*>(host);
  *flag_ = 1;
  MOE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag_), host, 0));
}

StreamBlocker::~StreamBlocker() {
  if (!flag_) return;
  *flag_ = 1;  // never leave a spinning kernel behind
  const cudaError_t status = cudaFreeHost(const_cast<int*>(flag_));
  if (status != cudaSuccess)
    std::fprintf(stderr, "moebench: cudaFreeHost failed: %s\n", cudaGetErrorString(status));
}

void StreamBlocker::block(cudaStream_t stream) {
  *flag_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  moebench_stream_blocker<<<1, 1, 0, stream>>>(device_flag_);
  MOE_CHECK_LAUNCH("moebench_stream_blocker");
}

void StreamBlocker::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (*flag_ == 0) *flag_ = 1;
}

bool StreamBlocker::timed_out() const { return *flag_ == 2; }

}  // namespace moe::measure
