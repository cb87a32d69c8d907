#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

// Kernels that stand in for other work on the GPU, so the bug probes can reproduce their bugs
// deterministically instead of by luck of timing.
namespace moe::kernels {

// Occupies `stream` for about `ns` nanoseconds (one thread spinning on the global timer): the
// queue ahead of a request, so what is enqueued after it is still pending when the host moves on.
void gpu_sleep(std::uint64_t ns, cudaStream_t stream);

// Another request writing its own fresh buffer: rewrites `bytes` at `dst` with `pattern`,
// over and over, for about `ns` nanoseconds, from one block (so other work runs beside it).
void scribble(void* dst, std::size_t bytes, std::uint32_t pattern, std::uint64_t ns,
              cudaStream_t stream);

// Loads both kernels now, so their first launch in a probe cannot wait for the work in flight
// (CUDA's lazy loading: launch.cuh, load_kernel) and finish what the probe keeps pending.
void preload_interference_kernels();

}  // namespace moe::kernels
