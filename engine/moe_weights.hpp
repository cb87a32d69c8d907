#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "engine/device_allocator.hpp"
#include "engine/pinned_buffer.hpp"
#include "engine/residency_transition.hpp"
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
  // int4_layout, bf16_layout: where int4 codes and bf16 values sit, as the forward's kernels
  // read them (kernels::int4_layout and bf16_layout of the layer's options); the resident
  // tables record them.
  MoeWeights(const kernels::MoeDims& dims, std::uint64_t seed, Routing routing,
             DeviceAllocator& allocator, Stream& stream,
             kernels::Int4Layout int4_layout = kernels::Int4Layout::rows,
             kernels::Bf16Layout bf16_layout = kernels::Bf16Layout::rows);
  MoeWeights(const MoeWeights&) = delete;
  MoeWeights& operator=(const MoeWeights&) = delete;

  const kernels::MoeDims& dims() const { return dims_; }
  std::uint64_t seed() const { return seed_; }
  kernels::Int4Layout int4_layout() const { return int4_layout_; }
  kernels::Bf16Layout bf16_layout() const { return bf16_layout_; }
  Routing routing() const { return routing_; }
  const void* router() const { return router_.data(); }
  const float* router_bias() const { return router_bias_ ? router_bias_.as<float>() : nullptr; }
  // noaux_tc's per-expert correction bias [E] (the generator's, selection_bias_host), else null.
  const float* selection_bias() const { return selection_bias_ ? selection_bias_.as<float>() : nullptr; }

  // Device pointers of every expert's tensors, in expert order (E routed, then S shared).
  struct ExpertBuffers {
    DeviceBuffer gate_up, gate_up_scales, down, down_scales;
    // A cold expert's tensors (expert residency), in table order; empty while it is hot.
    std::array<PinnedBuffer, 4> host;
    // Tensor t in table order (gate_up, gate_up_scales, down, down_scales) on the device.
    DeviceBuffer& device(int t);
    const DeviceBuffer& device(int t) const;
  };
  const std::vector<ExpertBuffers>& experts() const { return experts_; }

  // The resident tables for the fast path, built on first use (enqueued on `stream`).
  const kernels::ExpertTable& resident_table(Stream& stream);
  ResidentSlot& resident() { return resident_; }

  // Expert residency (docs/bugs.md, bug 6). Where each routed expert lives; shared experts always on
  // the device. A cold expert's tensors are mapped pinned host memory the kernels read in
  // place (docs/design/telemetry-and-residency.md says why not staging).
  const std::vector<Placement>& placement() const { return placement_; }
  // What the pointer tables hold for tensor t of expert e: device memory, or the device
  // mapping of its host copy, as its placement says (mid-commit a moved tensor has both).
  const void* tensor_pointer(int expert, int t) const;
  // Moves the routed experts to `target`, an expert (all its tensors) a group: every move is
  // prepared first (a copy where it goes, the source untouched), then all are committed and the
  // resident tables rebuilt. A fault at prepared step `fault.fail_at` (or any error) rolls every
  // prepared step back, newest first, and raises: the weights are then exactly as before. The
  // caller checked the boundary (no capture, no graph holding the tables, drained).
  void apply_residency(const std::vector<Placement>& target, Stream& stream, ResidencyFaultPoint fault = {});
  struct ResidencyCounters {
    std::size_t device_bytes_released = 0;    // device bytes given back by experts going cold
    std::size_t device_bytes_taken_back = 0;  // device bytes allocated by experts coming back
    std::size_t transitions = 0, rollbacks = 0;
  };
  const ResidencyCounters& residency_counters() const { return residency_; }

  // Device bytes of one expert (gate_up + down, with scales) and of the router.
  std::size_t expert_bytes() const;
  std::size_t router_bytes() const;
  std::size_t total_bytes() const;

 private:
  kernels::MoeDims dims_;
  std::uint64_t seed_;
  kernels::Int4Layout int4_layout_;
  kernels::Bf16Layout bf16_layout_;
  Routing routing_;
  DeviceAllocator& allocator_;
  DeviceBuffer router_;
  DeviceBuffer router_bias_;
  DeviceBuffer selection_bias_;
  std::vector<ExpertBuffers> experts_;
  std::vector<Placement> placement_;  // [E] routed experts
  ResidencyCounters residency_;
  ResidentSlot resident_;  // declared last: destroyed first, before the buffers it points to
};

}  // namespace moe
