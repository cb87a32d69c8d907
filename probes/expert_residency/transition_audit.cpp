#include "probes/expert_residency/transition_audit.hpp"

#include <unordered_set>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/moe_weights.hpp"
#include "engine/stream.hpp"

namespace moe {

std::vector<BlockLedger::Entry> freed_blocks_to_poison(const std::vector<BlockLedger::Entry>& released,
                                                       const std::vector<BlockLedger::Entry>& handed_out,
                                                       const void* spared) {
  // A block freed, handed out and freed again counts by its last release: newest first.
  std::vector<BlockLedger::Entry> out;
  std::unordered_set<const void*> seen;
  for (auto r = released.rbegin(); r != released.rend(); ++r) {
    if (r->ptr == spared || !seen.insert(r->ptr).second) continue;
    bool handed_again = false;
    for (const BlockLedger::Entry& h : handed_out) handed_again = handed_again || (h.ptr == r->ptr && h.serial > r->serial);
    if (!handed_again) out.push_back(*r);
  }
  return {out.rbegin(), out.rend()};  // in the order freed
}

TransitionAudit::TransitionAudit(MoeWeights& weights, DeviceAllocator& allocator, Stream& stream)
    : weights_(weights), allocator_(allocator), stream_(stream) {}

PointerTables TransitionAudit::read_tables() const {
  PointerTables t;
  t.experts = weights_.experts().size();
  t.pointers.assign(4 * t.experts, nullptr);
  const kernels::ExpertTable& table = weights_.resident_table(stream_);
  stream_.drain();  // a rebuild's upload is in flight on the engine's stream
  // The four arrays are one allocation, column after column (ResidentSlot).
  MOE_CUDA_CHECK(cudaMemcpy(t.pointers.data(), table.gate_up, t.pointers.size() * sizeof(void*), cudaMemcpyDeviceToHost));
  return t;
}

PointerTables TransitionAudit::expected_tables() const {
  PointerTables t;
  const auto& experts = weights_.experts();
  const auto& placement = weights_.placement();
  t.experts = experts.size();
  t.pointers.assign(4 * t.experts, nullptr);
  for (std::size_t e = 0; e < t.experts; ++e) {
    const bool cold = e < placement.size() && placement[e] == Placement::host;  // shared: always resident
    for (int c = 0; c < 4; ++c) {
      const PinnedBuffer& host = experts[e].host[static_cast<std::size_t>(c)];
      t.pointers[static_cast<std::size_t>(c) * t.experts + e] =
          cold ? (host ? host.device_pointer() : nullptr) : experts[e].device(c).data();
    }
  }
  return t;
}

void TransitionAudit::before() {
  before_ = read_tables();
  table_array_before_ = weights_.resident_table(stream_).gate_up;
  mark_ = allocator_.mark();
}

std::size_t TransitionAudit::after(const std::string& label) {
  ++transitions_;
  const PointerTables now = read_tables();
  const std::vector<TableMismatch> stale = table_mismatches(now, expected_tables());
  if (!stale.empty() && stale_entries_ == 0) detail_ = describe_mismatches(stale, label);
  if (stale_entries_ == 0 && stale.empty())
    detail_ = std::to_string(transitions_) + " transitions: every pointer names the copy the placement says";
  stale_entries_ += stale.size();
  const std::size_t moved = experts_changed(before_, now);
  moved_.push_back({{"transition", label}, {"experts_moved", moved}, {"stale_entries", stale.size()}});

  // Under a plain allocator a freed block went back to the driver: nothing of ours to write.
  if (allocator_.mode() == DeviceAllocator::Mode::caching) {
    for (const BlockLedger::Entry& b :
         freed_blocks_to_poison(allocator_.released_since(mark_), allocator_.handed_out_since(mark_), table_array_before_)) {
      MOE_CUDA_CHECK(cudaMemsetAsync(const_cast<void*>(b.ptr), DeviceAllocator::kPoisonByte, b.bytes, stream_.handle()));
      ++blocks_poisoned_;
      bytes_poisoned_ += b.bytes;
    }
    stream_.drain();
  }
  return moved;
}

nlohmann::json TransitionAudit::evidence() const {
  return {{"transitions", transitions_},
          {"stale_table_entries", stale_entries_},
          {"per_transition", moved_},
          {"freed_device_blocks_poisoned", blocks_poisoned_},
          {"freed_device_bytes_poisoned", bytes_poisoned_},
          {"poisoned_by", allocator_.mode() == DeviceAllocator::Mode::caching
                              ? "the probe, in the caching allocator's freed blocks"
                              : "nobody: a plain allocator gives freed blocks back to the driver"},
          {"freed_pinned_copies", "not poisoned: freed pinned memory is unmapped"}};
}

}  // namespace moe
