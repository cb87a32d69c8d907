#pragma once
#include <cstdint>
#include <vector>

#include "engine/device_allocator.hpp"
#include "engine/resident_slot.hpp"
#include "engine/routing.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe {

class Stream;

// One layer's weights on the device, generated from a seed by the counter-based generator (the
// CPU reference derives the same values). Every expert tensor is its own allocation, as in
// engines that load experts one by one; the per-expert pointer tables the fast path reads live
// in the ResidentSlot this object owns, so they cannot outlive these buffers (docs/bugs.md, bug 1).
class MoeWeights {
 public:
  MoeWeights(const kernels::MoeDims& dims, std::uint64_t seed, Routing routing,
             DeviceAllocator& allocator, Stream& stream);
  MoeWeights(const MoeWeights&) = delete;
  MoeWeights& operator=(const MoeWeights&) = delete;

  const kernels::MoeDims& dims() const { return dims_; }
  std::uint64_t seed() const { return seed_; }
  Routing routing() const { return routing_; }
  const void* router() const { return router_.data(); }
  const float* router_bias() const { return router_bias_ ? router_bias_.as<float>() : nullptr; }

  // Device pointers of every expert's tensors, in expert order (E routed, then S shared).
  struct ExpertBuffers {
    DeviceBuffer gate_up, gate_up_scales, down, down_scales;
  };
  const std::vector<ExpertBuffers>& experts() const { return experts_; }

  // The resident tables for the fast path, built on first use (enqueued on `stream`).
  const kernels::ExpertTable& resident_table(Stream& stream);
  ResidentSlot& resident() { return resident_; }

  // Device bytes of one expert (gate_up + down, with scales) and of the router.
  std::size_t expert_bytes() const;
  std::size_t router_bytes() const;
  std::size_t total_bytes() const;

 private:
  kernels::MoeDims dims_;
  std::uint64_t seed_;
  Routing routing_;
  DeviceAllocator& allocator_;
  DeviceBuffer router_;
  DeviceBuffer router_bias_;
  std::vector<ExpertBuffers> experts_;
  ResidentSlot resident_;  // declared last: destroyed first, before the buffers it points to
};

}  // namespace moe
