#include "probes/scratch_regrow/freed_block_handoff.hpp"

#include <exception>

namespace moe {

DeviceMemorySource FreedBlockHandoff::source() {
  return {[this](std::size_t bytes) { return lend(bytes); }, [this](void* ptr) { take_back(ptr); }};
}

void* FreedBlockHandoff::lend(std::size_t bytes) {
  DeviceBuffer block = backing_.allocate(bytes);
  void* ptr = block.data();
  lent_.emplace(ptr, std::move(block));
  return ptr;
}

void FreedBlockHandoff::take_back(void* ptr) {
  const auto it = lent_.find(ptr);
  if (it == lent_.end()) return;  // not ours: nothing to keep
  freed_.push_back(std::move(it->second));
  lent_.erase(it);
  if (!receiver_) return;
  // Called from a free, which must not raise: the probe reads the error after the forward.
  try {
    receiver_(freed_.back());
  } catch (const std::exception& e) {
    if (receiver_error_.empty()) receiver_error_ = e.what();
  }
}

}  // namespace moe
