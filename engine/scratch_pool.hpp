#pragma once
#include <cstddef>

#include "common/errors.hpp"
#include "engine/device_allocator.hpp"

namespace moe {

class Stream;

// A graph capture asked the scratch pool to grow. Growing would free memory the captured graph
// still references, so the pool refuses; the pool is unchanged and still usable afterwards.
class CaptureGrowthError : public Error {
 public:
  CaptureGrowthError(std::size_t have, std::size_t need);
};

// Working memory of the forward kernels. Grows on demand, never shrinks on its own. Every
// regrow drains the stream first: kernels enqueued earlier may still read the old buffer, and
// the caching allocator would hand it to the next allocation at once (docs/bugs.md, bug 2).
class ScratchPool {
 public:
  explicit ScratchPool(DeviceAllocator& allocator) : allocator_(allocator) {}
  ~ScratchPool();  // the owner drains before destroying (see MoeLayer::~MoeLayer)
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // A buffer of at least `bytes`, valid until the next ensure() that grows.
  void* ensure(std::size_t bytes, Stream& stream);
  // Whether ensure(bytes) would have to grow (capture support asks this).
  bool would_grow(std::size_t bytes) const { return bytes > buffer_.bytes(); }
  std::size_t capacity() const { return buffer_.bytes(); }
  // The block now in use: probe scratch-regrow proves the block a regrow freed is the one the
  // next request received by comparing addresses.
  const void* data() const { return buffer_.data(); }
  std::size_t regrows() const { return regrows_; }

 private:
  DeviceAllocator& allocator_;
  DeviceBuffer buffer_;
  std::size_t regrows_ = 0;
};

}  // namespace moe
