#include "engine/device_allocator.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "common/cuda_check.hpp"

namespace moe {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.owner_ = nullptr;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_ && owner_) owner_->release(ptr_, bytes_);
  owner_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

std::size_t DeviceAllocator::size_class(std::size_t bytes) {
  // Powers of two up to 2 MiB, then whole 2 MiB pages: bounded waste, few classes.
  constexpr std::size_t min_class = 512;
  constexpr std::size_t page = std::size_t{2} << 20;
  if (bytes <= min_class) return min_class;
  if (bytes >= page) return (bytes + page - 1) / page * page;
  std::size_t c = min_class;
  while (c < bytes) c <<= 1;
  return c;
}

DeviceAllocator::DeviceAllocator(Mode mode) : mode_(mode) {}

DeviceAllocator::~DeviceAllocator() {
  trim();
  if (stats_.bytes_in_use != 0)
    std::fprintf(stderr, "moebench: allocator destroyed with %zu bytes still in use\n",
                 stats_.bytes_in_use);
}

DeviceBuffer DeviceAllocator::allocate(std::size_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard lock(mutex_);
  void* ptr = nullptr;
  const std::size_t cls = mode_ == Mode::caching ? size_class(bytes) : bytes;
  if (mode_ == Mode::caching) {
    auto it = cache_.find(cls);
    if (it != cache_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
    }
  }
  if (!ptr) {
    cudaError_t status = cudaMalloc(&ptr, cls);
    if (status == cudaErrorMemoryAllocation && !cache_.empty()) {
      // Out of memory with blocks parked in the cache: give those back and try once more.
      (void)cudaGetLastError();
      release_cache_locked();
      status = cudaMalloc(&ptr, cls);
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      std::size_t free = 0, total = 0;
      if (cudaMemGetInfo(&free, &total) != cudaSuccess) (void)cudaGetLastError();  // message only
      throw EnvironmentError("device memory exhausted: asked for " + std::to_string(cls) +
                             " bytes, " + std::to_string(free) + " of " + std::to_string(total) +
                             " free (" + std::to_string(stats_.bytes_in_use) +
                             " in use by moebench)");
    }
    if (status != cudaSuccess) throw_cuda_error(status, "cudaMalloc", __FILE__, __LINE__);
    ++stats_.driver_allocations;
    stats_.bytes_reserved += cls;
  }
  if (!ever_handed_out_.insert(ptr).second) ++stats_.addresses_reused;
  ++stats_.allocations;
  stats_.bytes_in_use += bytes;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use)
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return DeviceBuffer(this, ptr, bytes);
}

void DeviceAllocator::release(void* ptr, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  stats_.bytes_in_use -= bytes;
  if (mode_ == Mode::caching) {
    cache_[size_class(bytes)].push_back(ptr);
    return;
  }
  // Called from destructors: report, never throw.
  const cudaError_t status = cudaFree(ptr);
  if (status != cudaSuccess)
    std::fprintf(stderr, "moebench: cudaFree failed: %s\n", cudaGetErrorString(status));
  stats_.bytes_reserved -= bytes;
}

void DeviceAllocator::trim() {
  std::lock_guard lock(mutex_);
  release_cache_locked();
}

void DeviceAllocator::release_cache_locked() {
  for (auto& [cls, blocks] : cache_) {
    for (void* ptr : blocks) {
      const cudaError_t status = cudaFree(ptr);
      if (status != cudaSuccess)
        std::fprintf(stderr, "moebench: cudaFree failed: %s\n", cudaGetErrorString(status));
      stats_.bytes_reserved -= cls;
    }
  }
  cache_.clear();
}

AllocatorStats DeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace moe
