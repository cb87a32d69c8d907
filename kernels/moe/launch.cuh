#pragma once
// Kernel launch with optional programmatic dependent launch (PDL, sm_90+): the kernel may start
// while the previous kernel in the stream is still running; it must call grid_dependency_wait()
// before reading anything that kernel writes. Captured into graphs as programmatic edges.
#include <cuda_runtime.h>

#include "common/cuda_check.hpp"

namespace moe::kernels::detail {

// Blocks until the preceding kernel (launched before this one in the stream) has completed and
// its memory is visible. A no-op when the kernel was launched without PDL or below sm_90.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream (if launched with PDL) start being scheduled once every
// block of this grid has called it or exited.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

bool programmatic_launch_supported();  // forward.cu: sm_90+

// `programmatic`: the caller's ForwardOptions::programmatic_launch (where the kernel waits
// with grid_dependency_wait); ignored below sm_90.
template <class... KernelArgs, class... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t smem,
            cudaStream_t stream, bool programmatic, const char* name, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  if (programmatic && programmatic_launch_supported()) {
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  const cudaError_t status = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (status != cudaSuccess) ::moe::throw_cuda_error(status, name, __FILE__, __LINE__);
}

// Loads `kernel` on the current device now. Under CUDA's lazy loading (the default since 12.2)
// a kernel is loaded at its first launch, and loading may wait for the device's work in
// flight: a forward that first needs a kernel would stall its host and drain the device.
template <class... KernelArgs>
void load_kernel(void (*kernel)(KernelArgs...), const char* name) {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
  if (status != cudaSuccess) ::moe::throw_cuda_error(status, name, __FILE__, __LINE__);
}

// Resident blocks of `Kernel` on the current device at kThreads per block, cached per device.
// The kernel is a template argument so each kernel has its own cache: a cache keyed by the
// kernel's type would hand one kernel's occupancy to every kernel of the same signature.
template <auto Kernel, int kThreads>
int resident_blocks() {
  static int cached[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && cached[dev]) return cached[dev];
  int per_sm = 0, sms = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kThreads, 0));
  MOE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int n = (per_sm > 0 ? per_sm : 1) * sms;
  if (dev < 64) cached[dev] = n;
  return n;
}

}  // namespace moe::kernels::detail
