#include "kernels/interference/interference_kernels.hpp"

#include "common/cuda_check.hpp"

namespace moe::kernels {

namespace {

__device__ unsigned long long timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gpu_sleep_kernel(unsigned long long ns) {
  const unsigned long long start = timer_ns();
  while (timer_ns() - start < ns) __nanosleep(1000);
}

__global__ void scribble_kernel(std::uint32_t* dst, std::size_t words, std::uint32_t pattern,
                                unsigned long long ns) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) start = timer_ns();
  __syncthreads();
  for (;;) {
    for (std::size_t i = threadIdx.x; i < words; i += blockDim.x)
      reinterpret_cast<volatile std::uint32_t*>(dst)[i] = pattern;
    __syncthreads();
    // Thread 0 decides for the block, so every thread leaves the loop together.
    __shared__ bool done;
    if (threadIdx.x == 0) done = timer_ns() - start >= ns;
    __syncthreads();
    if (done) return;
  }
}

}  // namespace

void preload_interference_kernels() {
  cudaFuncAttributes attributes{};
  MOE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, gpu_sleep_kernel));
  MOE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, scribble_kernel));
}

void gpu_sleep(std::uint64_t ns, cudaStream_t stream) {
  gpu_sleep_kernel<<<1, 1, 0, stream>>>(ns);
  MOE_CHECK_LAUNCH("gpu_sleep_kernel");
}

void scribble(void* dst, std::size_t bytes, std::uint32_t pattern, std::uint64_t ns,
              cudaStream_t stream) {
  scribble_kernel<<<1, 1024, 0, stream>>>(static_cast<std::uint32_t*>(dst), bytes / 4, pattern, ns);
  MOE_CHECK_LAUNCH("scribble_kernel");
}

}  // namespace moe::kernels
