#pragma once
// Host vectors to and from the device for the GPU tests, on the legacy default stream. Each
// returns only once its bytes have landed: the kernels under test run on non-blocking streams,
// which never wait for the legacy stream (a pageable upload returns once staged, not copied).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"

namespace moe::test {

template <class T>
DeviceBuffer upload(DeviceAllocator& a, const std::vector<T>& v) {
  DeviceBuffer b = a.allocate(sizeof(T) * std::max<std::size_t>(v.size(), 1));
  MOE_CUDA_CHECK(cudaMemcpy(b.data(), v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
  MOE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return b;
}

template <class T>
std::vector<T> download(const void* src, std::size_t n) {
  std::vector<T> v(n);
  if (n) MOE_CUDA_CHECK(cudaMemcpy(v.data(), src, sizeof(T) * n, cudaMemcpyDeviceToHost));
  return v;
}

template <class T>
std::vector<T> download(const DeviceBuffer& b, std::size_t n) {
  return download<T>(b.data(), n);
}

}  // namespace moe::test
