#include "engine/block_ledger.hpp"

#include <unordered_set>

namespace moe {

void BlockLedger::record(Event event, const void* ptr, std::size_t bytes) {
  entries_.push_back({next_++, event, ptr, bytes});
  if (entries_.size() > capacity_) {
    entries_.pop_front();
    first_kept_ = entries_.front().serial;
  }
  if (event == Event::poisoned) poisoned_[ptr] = bytes;
  if (event == Event::handed_out) poisoned_.erase(ptr);  // its new owner writes it
}

std::vector<BlockLedger::Entry> BlockLedger::since(std::uint64_t mark, Event event) const {
  std::vector<Entry> out;
  for (const Entry& e : entries_)
    if (e.serial >= mark && e.event == event) out.push_back(e);
  return out;
}

bool BlockLedger::whole_since(std::uint64_t mark) const { return mark >= first_kept_; }

std::vector<const void*> BlockLedger::reused(const std::vector<Entry>& freed,
                                             const std::vector<Entry>& received) {
  std::unordered_set<const void*> got;
  for (const Entry& e : received) got.insert(e.ptr);
  std::vector<const void*> out;
  std::unordered_set<const void*> listed;
  for (const Entry& e : freed)
    if (got.count(e.ptr) && listed.insert(e.ptr).second) out.push_back(e.ptr);
  return out;
}

bool BlockLedger::holds_poison(const void* ptr) const { return poisoned_.count(ptr) != 0; }

}  // namespace moe
