#pragma once
// Pinned host memory mapped into the device's address space (cudaHostAllocMapped): kernels
// read it through device_pointer() over the bus, with no copy. Cold experts live here.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

#include "common/cuda_check.hpp"

namespace moe {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const cudaError_t status = cudaHostAlloc(&host_, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw EnvironmentError("pinned host memory exhausted: asked for " + std::to_string(bytes) + " bytes");
    }
    if (status != cudaSuccess) throw_cuda_error(status, "cudaHostAlloc", __FILE__, __LINE__);
    MOE_CUDA_CHECK(cudaHostGetDevicePointer(&device_, host_, 0));
  }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(host_, o.host_);
      std::swap(device_, o.device_);
      std::swap(bytes_, o.bytes_);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // The owner drains before this: a kernel may still read the memory (docs/bugs.md, bug 2).
  void reset() {
    if (host_ && cudaFreeHost(host_) != cudaSuccess) std::fprintf(stderr, "moebench: cudaFreeHost failed\n");
    host_ = device_ = nullptr;
    bytes_ = 0;
  }
  void* host() const { return host_; }
  void* device_pointer() const { return device_; }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return host_ != nullptr; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace moe
