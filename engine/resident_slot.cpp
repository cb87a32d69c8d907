#include "engine/resident_slot.hpp"

#include <memory>
#include <unordered_map>

#include "common/cuda_check.hpp"
#include "engine/fault_injection.hpp"
#include "engine/moe_weights.hpp"
#include "engine/stream.hpp"

namespace moe {

namespace {

// The four pointer arrays for `weights`, column after column (gate_up, gate_up_scales, down,
// down_scales), E + S entries each.
void fill_tables(const MoeWeights& weights, std::vector<const void*>& host) {
  const std::size_t n = weights.experts().size();
  host.assign(4 * n, nullptr);
  for (std::size_t e = 0; e < n; ++e)
    for (std::size_t t = 0; t < 4; ++t)  // device memory, or a cold expert's mapped host copy
      host[t * n + e] = weights.tensor_pointer(static_cast<int>(e), static_cast<int>(t));
}

// Uploads `host` (filled by fill_tables) into a new `device` array (enqueued on `stream`).
kernels::ExpertTable upload_filled(const MoeWeights& weights, DeviceBuffer& device,
                                   const std::vector<const void*>& host, DeviceAllocator& allocator,
                                   Stream& stream) {
  const std::size_t n = weights.experts().size();
  device = allocator.allocate(host.size() * sizeof(void*));
  MOE_CUDA_CHECK(cudaMemcpyAsync(device.data(), host.data(), host.size() * sizeof(void*),
                                 cudaMemcpyHostToDevice, stream.handle()));
  const auto* base = device.as<const void* const>();
  return {base, base + n, base + 2 * n, base + 3 * n, weights.int4_layout(), weights.bf16_layout()};
}

kernels::ExpertTable upload_tables(const MoeWeights& weights, DeviceBuffer& device,
                                   std::vector<const void*>& host, DeviceAllocator& allocator,
                                   Stream& stream) {
  fill_tables(weights, host);
  return upload_filled(weights, device, host, allocator, stream);
}

// ---- A rebuild that misses a column, live only under Mutation::residency_stale_column -------
// The down column of the first routed expert that went cold keeps the pointer of the device
// block the transition frees right after: that expert's down GEMM reads freed memory. Cold
// experts only: a stale pointer into a freed pinned host copy would end the run in an illegal
// address instead of the wrong numbers the bug gives.
void keep_one_stale_down_pointer(const MoeWeights& weights, const std::vector<const void*>& previous,
                                 std::vector<const void*>& host) {
  const std::size_t n = weights.experts().size();
  constexpr std::size_t kDownColumn = 2;
  if (previous.size() != host.size()) return;
  for (std::size_t e = 0; e < weights.placement().size(); ++e) {
    const std::size_t at = kDownColumn * n + e;
    if (weights.placement()[e] == Placement::host && previous[at] != host[at]) {
      host[at] = previous[at];
      return;
    }
  }
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
  std::vector<const void*> previous = host_tables_;
  fill_tables(weights, host_tables_);
  if (mutation_active(Mutation::residency_stale_column)) keep_one_stale_down_pointer(weights, previous, host_tables_);
  table_ = upload_filled(weights, device_tables_, host_tables_, allocator_, stream);
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
