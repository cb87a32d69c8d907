#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace moe {

class DeviceAllocator;

// A device allocation; returns its memory to the allocator when destroyed. The owner must make
// sure no enqueued kernel still reads it by then (drain first): the allocator cannot know.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  void reset();

 private:
  friend class DeviceAllocator;
  DeviceBuffer(DeviceAllocator* owner, void* ptr, std::size_t bytes)
      : owner_(owner), ptr_(ptr), bytes_(bytes) {}
  DeviceAllocator* owner_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct AllocatorStats {
  std::size_t bytes_in_use = 0;       // requested bytes of live buffers
  std::size_t peak_bytes_in_use = 0;
  std::size_t bytes_reserved = 0;     // held from the driver: live blocks plus the cache
  std::size_t allocations = 0;        // buffers handed out
  std::size_t addresses_reused = 0;   // buffers handed an address some earlier buffer had
  std::size_t driver_allocations = 0; // cudaMalloc calls
};

// Device memory for the engine. `caching` keeps freed blocks in size classes and hands them out
// again last-in first-out, as real engines' allocators do, so address reuse is the normal case.
// `plain` calls cudaMalloc/cudaFree for every buffer.
class DeviceAllocator {
 public:
  enum class Mode { caching, plain };

  explicit DeviceAllocator(Mode mode = Mode::caching);
  ~DeviceAllocator();  // returns the cache to the driver; live buffers are a caller bug
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // Raises EnvironmentError naming the request and the free memory when the device is full
  // (after giving the cache back once).
  DeviceBuffer allocate(std::size_t bytes);
  // Returns every cached block to the driver (live buffers stay).
  void trim();
  AllocatorStats stats() const;
  Mode mode() const { return mode_; }

  // The size class a request of `bytes` is served from (exposed for tests).
  static std::size_t size_class(std::size_t bytes);

 private:
  friend class DeviceBuffer;
  void release(void* ptr, std::size_t bytes);
  void release_cache_locked();  // trim() with mutex_ held

  Mode mode_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> cache_;  // size class -> free blocks, LIFO
  std::unordered_set<void*> ever_handed_out_;
  AllocatorStats stats_;
};

}  // namespace moe
