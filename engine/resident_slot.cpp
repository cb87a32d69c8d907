#include "engine/resident_slot.hpp"

#include <memory>
#include <unordered_map>

#include "common/cuda_check.hpp"
#include "engine/fault_injection.hpp"
#include "engine/moe_weights.hpp"
#include "engine/stream.hpp"

namespace moe {

namespace {

// Builds the four pointer arrays for `weights` into `device` (enqueued on `stream`).
kernels::ExpertTable upload_tables(const MoeWeights& weights, DeviceBuffer& device,
                                   std::vector<const void*>& host, DeviceAllocator& allocator,
                                   Stream& stream) {
  const auto& experts = weights.experts();
  const std::size_t n = experts.size();
  host.assign(4 * n, nullptr);
  for (std::size_t e = 0; e < n; ++e)
    for (std::size_t t = 0; t < 4; ++t)  // device memory, or a cold expert's mapped host copy
      host[t * n + e] = weights.tensor_pointer(static_cast<int>(e), static_cast<int>(t));
  device = allocator.allocate(host.size() * sizeof(void*));
  MOE_CUDA_CHECK(cudaMemcpyAsync(device.data(), host.data(), host.size() * sizeof(void*),
                                 cudaMemcpyHostToDevice, stream.handle()));
  const auto* base = device.as<const void* const>();
  return {base, base + n, base + 2 * n, base + 3 * n, weights.int4_layout(), weights.bf16_layout()};
}

// ---- The historic design, live only under Mutation::static_resident_cache ----------------
// A process-lifetime map keyed by the raw address of the weights object. Entries are never
// evicted, so a new weights object constructed at a freed one's address gets the old, freed
// device pointers. Its tables come from an allocator that is never destroyed, as a static's
// would be; that leak is the bug's own design.
struct LegacyEntry {
  DeviceBuffer device;
  std::vector<const void*> host;
  kernels::ExpertTable table;
};

kernels::ExpertTable legacy_lookup(const MoeWeights& weights, Stream& stream) {
  static auto* allocator = new DeviceAllocator(DeviceAllocator::Mode::plain);
  static auto* cache = new std::unordered_map<const void*, std::unique_ptr<LegacyEntry>>();
  auto [it, inserted] = cache->try_emplace(&weights);
  if (inserted) {
    it->second = std::make_unique<LegacyEntry>();
    LegacyEntry& e = *it->second;
    e.table = upload_tables(weights, e.device, e.host, *allocator, stream);
  }
  return it->second->table;
}

// ---- The same design keyed by a device address, live only under Mutation::device_keyed_cache
// A process-lifetime map keyed by the router's device pointer. While freed device memory is
// held back that key is never seen twice; once an allocator hands a freed router's address to
// a later engine's router, that engine gets the old engine's tables, whose pointers name
// blocks that now hold other tensors. The tables come from a never-destroyed allocator, as
// above.
kernels::ExpertTable device_keyed_lookup(const MoeWeights& weights, Stream& stream) {
  static auto* allocator = new DeviceAllocator(DeviceAllocator::Mode::plain);
  static auto* cache = new std::unordered_map<const void*, std::unique_ptr<LegacyEntry>>();
  auto [it, inserted] = cache->try_emplace(weights.router());
  if (inserted) {
    it->second = std::make_unique<LegacyEntry>();
    LegacyEntry& e = *it->second;
    e.table = upload_tables(weights, e.device, e.host, *allocator, stream);
  }
  return it->second->table;
}

}  // namespace

void ResidentSlot::rebuild(const MoeWeights& weights, Stream& stream) {
  if (!built_ || mutation_active(Mutation::static_resident_cache) ||
      mutation_active(Mutation::device_keyed_cache))
    return;
  stream.drain();  // the previous upload's host source is about to be overwritten
  table_ = upload_tables(weights, device_tables_, host_tables_, allocator_, stream);
  ++builds_;
}

const kernels::ExpertTable& ResidentSlot::acquire(const MoeWeights& weights, Stream& stream) {
  ++uses_;
  if (mutation_active(Mutation::static_resident_cache) || mutation_active(Mutation::device_keyed_cache)) {
    table_ = mutation_active(Mutation::static_resident_cache) ? legacy_lookup(weights, stream)
                                                              : device_keyed_lookup(weights, stream);
    if (!built_) ++builds_;
    built_ = true;
    return table_;
  }
  if (!built_) {
    table_ = upload_tables(weights, device_tables_, host_tables_, allocator_, stream);
    built_ = true;
    ++builds_;
  }
  return table_;
}

}  // namespace moe
