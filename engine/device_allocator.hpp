#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "common/cuda_event.hpp"
#include "engine/block_ledger.hpp"

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
  std::size_t blocks_poisoned = 0;    // freed blocks filled with the poison pattern
  std::size_t bytes_quarantined = 0;  // poisoned blocks held back from reuse
  std::size_t bytes_pending_release = 0;  // released after a stream's work (release_after)
};

// Device memory for the engine. `caching` keeps freed blocks in size classes and hands them out
// again last-in first-out, as real engines' allocators do, so address reuse is the normal case.
// `plain` calls cudaMalloc/cudaFree for every buffer.
//
// Either mode can poison what is freed: each released block is filled with kPoisonByte and held
// back (quarantined) instead of being reused or returned, until trim(). A kernel that reads
// freed memory through a stale pointer then reads poison (bf16 NaN) deterministically, rather
// than whatever the next owner happened to write there, which may even be the right values
// (probe two-engine). The owner must have drained before freeing, as always.
// Where a DeviceAllocator's blocks come from when not from the driver: memory another allocator
// lends (an engine adapter given moebench's allocator: engine_abi.h, moebench_device_allocator).
// `allocate` returns null when that memory is exhausted and raises on any other failure;
// `release` never raises (it is called from destructors).
struct DeviceMemorySource {
  std::function<void*(std::size_t)> allocate;
  std::function<void(void*)> release;
};

class DeviceAllocator {
 public:
  enum class Mode { caching, plain };
  enum class Freed { reuse, poison };
  // 0xff bytes: bf16 0xffff is a NaN, and an int4 group with a NaN scale is NaN too.
  static constexpr unsigned char kPoisonByte = 0xff;

  explicit DeviceAllocator(Mode mode = Mode::caching, Freed freed = Freed::reuse);
  // Blocks from `source` instead of cudaMalloc, handed back to it instead of cudaFree.
  DeviceAllocator(Mode mode, Freed freed, DeviceMemorySource source);
  ~DeviceAllocator();  // returns the cache to the driver; live buffers are a caller bug
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // Raises EnvironmentError naming the request and the free memory when the device is full
  // (after giving the cache back once).
  DeviceBuffer allocate(std::size_t bytes);
  // Returns every cached block to the driver (live buffers stay).
  void trim();
  // Stream-ordered release: `buffers` come back to the allocator only once everything
  // enqueued on `stream` up to now has finished (an event recorded there), so no allocate()
  // can hand their blocks out while that work may still read or write them. Never waits: the
  // finished batches are taken back at the next allocate() or trim(). For an owner that must
  // not block its host thread on teardown (a layer dropped with an exchange in flight).
  void release_after(std::vector<DeviceBuffer> buffers, cudaStream_t stream);
  AllocatorStats stats() const;
  Mode mode() const { return mode_; }
  Freed freed() const { return freed_; }

  // Block identity (see BlockLedger): take a mark before the event, then read what was freed
  // and handed out since, by address.
  std::uint64_t mark() const;
  std::vector<BlockLedger::Entry> released_since(std::uint64_t mark) const;
  std::vector<BlockLedger::Entry> handed_out_since(std::uint64_t mark) const;
  // Whether `ptr` is a freed block that still holds the poison pattern (Freed::poison).
  bool holds_poison(const void* ptr) const;

  // The size class a request of `bytes` is served from (exposed for tests).
  static std::size_t size_class(std::size_t bytes);

 private:
  friend class DeviceBuffer;
  void release(void* ptr, std::size_t bytes);
  void release_cache_locked();  // trim() with mutex_ held
  // A block back to where it came from (the driver or the source); reports, never raises.
  void return_block(void* ptr);
  // Takes back the batches of release_after whose event has completed; with `wait`, waits
  // for every batch up to a deadline first (the destructor).
  void reap_deferred(bool wait);

  struct DeferredBatch {
    std::unique_ptr<CudaEvent> done;  // recorded after the owner's last work on its stream
    std::vector<DeviceBuffer> buffers;
  };

  Mode mode_;
  Freed freed_;
  DeviceMemorySource source_;  // empty: the driver
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> cache_;  // size class -> free blocks, LIFO
  std::vector<std::pair<void*, std::size_t>> quarantine_;  // poisoned blocks, driver bytes
  BlockLedger ledger_;
  std::unordered_set<void*> ever_handed_out_;
  AllocatorStats stats_;
  std::mutex deferred_mutex_;  // apart from mutex_: releasing a batch takes mutex_
  std::vector<DeferredBatch> deferred_;
};

}  // namespace moe
