#pragma once
// Device memory lent to a layer by probe scratch-regrow, so a block the layer frees goes to
// another stream's request at once, inside the free: the request that wins the race against
// the pool's own next allocation. A caching allocator hands a freed block back to whoever asks
// first for its size class; the pool asking again at once (a regrow within the same class)
// would get its own block back, whose only writer is then the next call on the same stream,
// ordered behind the pending one, so a missing drain could never show. Here the next owner is
// always another stream, whatever the sizes.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/device_allocator.hpp"

namespace moe {

class FreedBlockHandoff {
 public:
  // What the next owner does with a block the moment it is freed (the block stays alive until
  // this object is destroyed).
  using Receiver = std::function<void(const DeviceBuffer& block)>;

  // Blocks come from `backing` (plain, so nothing of its own is reused) and go back to it only
  // when this object is destroyed, after the owner drained every stream that used them.
  explicit FreedBlockHandoff(DeviceAllocator& backing) : backing_(backing) {}
  FreedBlockHandoff(const FreedBlockHandoff&) = delete;
  FreedBlockHandoff& operator=(const FreedBlockHandoff&) = delete;

  // For DeviceAllocator(Mode::plain, Freed::reuse, source()): every allocate and free of that
  // allocator comes here.
  DeviceMemorySource source();

  // For the scope of one object of this class, each freed block goes to `receiver`; outside
  // it (teardown, or unwinding past a forward that raised) a freed block is only kept.
  class Receiving {
   public:
    Receiving(FreedBlockHandoff& handoff, Receiver receiver) : handoff_(handoff) {
      handoff_.receiver_ = std::move(receiver);
    }
    ~Receiving() { handoff_.receiver_ = nullptr; }
    Receiving(const Receiving&) = delete;
    Receiving& operator=(const Receiving&) = delete;

   private:
    FreedBlockHandoff& handoff_;
  };
  // What the receiver raised, if anything (a free must not raise): empty when nothing did.
  const std::string& receiver_error() const { return receiver_error_; }

 private:
  void* lend(std::size_t bytes);
  void take_back(void* ptr);

  DeviceAllocator& backing_;
  std::map<const void*, DeviceBuffer> lent_;
  std::vector<DeviceBuffer> freed_;  // kept to the end: the next owner may still write them
  Receiver receiver_;
  std::string receiver_error_;
};

}  // namespace moe
