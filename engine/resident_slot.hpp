#pragma once
#include <cstddef>
#include <vector>

#include "engine/device_allocator.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe {

class MoeWeights;
class Stream;

// The per-weights resident state of the fast path: device arrays of per-expert pointers, uploaded
// once (lazily, on the first forward) so a captured graph only reads resident buffers. It is a
// member of the weights it describes, so it dies with them (docs/bugs.md, bug 1). The historic
// design kept it in a process-wide map keyed by the weights' address; the mutation
// static-resident-cache restores that design, here, to prove probe two-engine catches it; the
// mutation device-keyed-cache keys the same map by the router's device address instead.
class ResidentSlot {
 public:
  explicit ResidentSlot(DeviceAllocator& allocator) : allocator_(allocator) {}
  ResidentSlot(const ResidentSlot&) = delete;
  ResidentSlot& operator=(const ResidentSlot&) = delete;

  // The tables for `weights`, built on first use (an upload enqueued on `stream`). Counts a
  // fast-path use each call.
  const kernels::ExpertTable& acquire(const MoeWeights& weights, Stream& stream);

  // Uploads the tables again into a new device array (after a residency transition moved
  // experts): a graph captured before holds the old array's address, which is freed here, so
  // no such graph may exist (Engine::apply_residency refuses). No-op before the first build.
  void rebuild(const MoeWeights& weights, Stream& stream);

  bool built() const { return built_; }
  std::size_t uses() const { return uses_; }
  std::size_t builds() const { return builds_; }

 private:
  DeviceAllocator& allocator_;
  DeviceBuffer device_tables_;            // 4 arrays of E + S pointers
  std::vector<const void*> host_tables_;  // upload source, kept alive for the async copy
  kernels::ExpertTable table_;
  bool built_ = false;
  std::size_t uses_ = 0;
  std::size_t builds_ = 0;
};

}  // namespace moe
