#pragma once
#include <cstddef>
#include <memory>

#include "engine/moe_weights.hpp"

namespace moe {

// Host storage for the MoeWeights objects of an engine, owned by the caller so it can outlive
// engines: a later engine's weights are then constructed at the very addresses an earlier engine's
// had. Probe two-engine uses this to force host-address reuse (docs/bugs.md, bug 1) instead of
// hoping malloc hands the same address back.
class WeightsArena {
 public:
  explicit WeightsArena(int slots)
      : slots_(slots), storage_(new Slot[static_cast<std::size_t>(slots)]) {}
  int slots() const { return slots_; }
  void* slot(int i) { return storage_[static_cast<std::size_t>(i)].bytes; }

 private:
  struct Slot {
    alignas(MoeWeights) std::byte bytes[sizeof(MoeWeights)];
  };
  int slots_;
  std::unique_ptr<Slot[]> storage_;
};

}  // namespace moe
