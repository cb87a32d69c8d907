#include "engine/device_allocator.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>
#include <utility>

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

DeviceAllocator::DeviceAllocator(Mode mode, Freed freed) : mode_(mode), freed_(freed) {}

DeviceAllocator::DeviceAllocator(Mode mode, Freed freed, DeviceMemorySource source)
    : mode_(mode), freed_(freed), source_(std::move(source)) {
  if (!source_.allocate || !source_.release)
    throw Error(ExitCode::probe_error, "DeviceAllocator: a memory source needs both allocate and release");
}

void DeviceAllocator::return_block(void* ptr) {
  if (source_.release) {
    source_.release(ptr);
    return;
  }
  const cudaError_t status = cudaFree(ptr);
  if (status != cudaSuccess) std::fprintf(stderr, "moebench: cudaFree failed: %s\n", cudaGetErrorString(status));
}

DeviceAllocator::~DeviceAllocator() {
  reap_deferred(true);
  trim();
  if (stats_.bytes_in_use != 0)
    std::fprintf(stderr, "moebench: allocator destroyed with %zu bytes still in use\n",
                 stats_.bytes_in_use);
}

DeviceBuffer DeviceAllocator::allocate(std::size_t bytes) {
  if (bytes == 0) return {};
  reap_deferred(false);
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
  if (!ptr && source_.allocate) {
    ptr = source_.allocate(cls);
    if (!ptr)
      throw EnvironmentError("lent device memory exhausted: asked for " + std::to_string(cls) + " bytes (" +
                             std::to_string(stats_.bytes_in_use) + " in use by this allocator)");
    ++stats_.driver_allocations;
    stats_.bytes_reserved += cls;
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
  ledger_.record(BlockLedger::Event::handed_out, ptr, bytes);
  stats_.bytes_in_use += bytes;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use)
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return DeviceBuffer(this, ptr, bytes);
}

void DeviceAllocator::release(void* ptr, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  stats_.bytes_in_use -= bytes;
  ledger_.record(BlockLedger::Event::released, ptr, bytes);
  if (freed_ == Freed::poison) {
    const std::size_t held = mode_ == Mode::caching ? size_class(bytes) : bytes;
    // On the legacy stream, waited for here: the poison is in place before anyone can look,
    // and the wait covers this memset alone (the engine's streams are non-blocking), so no
    // pending kernel of the owner is waited for that the owner did not wait for itself.
    cudaError_t status = cudaMemsetAsync(ptr, kPoisonByte, held, nullptr);
    if (status == cudaSuccess) status = cudaStreamSynchronize(nullptr);
    if (status != cudaSuccess) {  // called from destructors: report, never throw
      std::fprintf(stderr, "moebench: poisoning a freed block failed: %s\n",
                   cudaGetErrorString(status));
    } else {
      ledger_.record(BlockLedger::Event::poisoned, ptr, held);
      ++stats_.blocks_poisoned;
    }
    quarantine_.emplace_back(ptr, held);
    stats_.bytes_quarantined += held;
    return;
  }
  if (mode_ == Mode::caching) {
    cache_[size_class(bytes)].push_back(ptr);
    return;
  }
  return_block(ptr);  // called from destructors: reports, never throws
  stats_.bytes_reserved -= bytes;
}

void DeviceAllocator::trim() {
  reap_deferred(false);
  std::lock_guard lock(mutex_);
  release_cache_locked();
}

void DeviceAllocator::release_after(std::vector<DeviceBuffer> buffers, cudaStream_t stream) {
  DeferredBatch batch;
  std::size_t bytes = 0;
  for (const DeviceBuffer& b : buffers) bytes += b.bytes();
  // Called from destructors: on any failure the buffers are kept (never handed out early).
  try {
    batch.done = std::make_unique<CudaEvent>();
    batch.done->record(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: a stream-ordered release could not record its event (%s); "
                 "%zu bytes stay allocated\n", e.what(), bytes);
    for (DeviceBuffer& b : buffers) {  // leaked on purpose: a pending kernel may use them
      b.owner_ = nullptr;
      b.ptr_ = nullptr;
    }
    return;
  }
  batch.buffers = std::move(buffers);
  {
    std::lock_guard lock(mutex_);
    stats_.bytes_pending_release += bytes;
  }
  std::lock_guard lock(deferred_mutex_);
  deferred_.push_back(std::move(batch));
}

void DeviceAllocator::reap_deferred(bool wait) {
  // The destructor's wait is bounded: an owner must have ended its work (a stuck collective
  // is aborted by the communicator's watchdog before this), so past the deadline the blocks
  // are left to the driver rather than hang.
  constexpr auto kDeadline = std::chrono::seconds(60);
  const auto until = std::chrono::steady_clock::now() + kDeadline;
  std::vector<DeferredBatch> done;
  {
    std::lock_guard lock(deferred_mutex_);
    for (std::size_t i = 0; i < deferred_.size();) {
      cudaError_t s = cudaEventQuery(deferred_[i].done->handle());
      while (wait && s == cudaErrorNotReady && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        s = cudaEventQuery(deferred_[i].done->handle());
      }
      if (s == cudaSuccess) {
        done.push_back(std::move(deferred_[i]));
        deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (s != cudaErrorNotReady) (void)cudaGetLastError();  // a faulted context: keep them
      ++i;
    }
    if (wait && !deferred_.empty()) {
      std::fprintf(stderr, "moebench: %zu stream-ordered releases still pending after %lld s; "
                   "their blocks are left to the driver\n", deferred_.size(),
                   static_cast<long long>(kDeadline.count()));
      for (DeferredBatch& b : deferred_) {
        for (DeviceBuffer& buffer : b.buffers) {
          {
            std::lock_guard lock(mutex_);
            stats_.bytes_in_use -= buffer.bytes();
            stats_.bytes_pending_release -= buffer.bytes();
          }
          buffer.owner_ = nullptr;
          buffer.ptr_ = nullptr;
        }
      }
      deferred_.clear();
    }
  }
  for (DeferredBatch& b : done) {
    std::size_t bytes = 0;
    for (DeviceBuffer& buffer : b.buffers) {
      bytes += buffer.bytes();
      buffer.reset();
    }
    {
      std::lock_guard lock(mutex_);
      stats_.bytes_pending_release -= bytes;
    }
  }
}

std::uint64_t DeviceAllocator::mark() const {
  std::lock_guard lock(mutex_);
  return ledger_.mark();
}

std::vector<BlockLedger::Entry> DeviceAllocator::released_since(std::uint64_t mark) const {
  std::lock_guard lock(mutex_);
  return ledger_.since(mark, BlockLedger::Event::released);
}

std::vector<BlockLedger::Entry> DeviceAllocator::handed_out_since(std::uint64_t mark) const {
  std::lock_guard lock(mutex_);
  return ledger_.since(mark, BlockLedger::Event::handed_out);
}

bool DeviceAllocator::holds_poison(const void* ptr) const {
  std::lock_guard lock(mutex_);
  return ledger_.holds_poison(ptr);
}

void DeviceAllocator::release_cache_locked() {
  for (auto& [cls, blocks] : cache_) {
    for (void* ptr : blocks) {
      return_block(ptr);
      stats_.bytes_reserved -= cls;
    }
  }
  cache_.clear();
  for (auto [ptr, held] : quarantine_) {
    return_block(ptr);
    stats_.bytes_reserved -= held;
  }
  quarantine_.clear();
  stats_.bytes_quarantined = 0;
}

AllocatorStats DeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace moe
