#pragma once
// What expert-residency proves about every residency transition from what the device holds,
// not from the plan: the layer's pointer tables read back against the placement (the device
// copy of a resident expert, the mapped pinned copy of a cold one), the experts whose table
// entries changed, and poison written into every device block the transition freed, so a
// stale pointer the table check did not see still reads NaN and the output checks fail.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/block_ledger.hpp"
#include "probes/expert_residency/table_check.hpp"

namespace moe {

class DeviceAllocator;
class MoeWeights;
class Stream;

// The device blocks a transition freed that are still the allocator's to hold (released since
// the mark and not handed out again after), less `spared`: the tables' old array, which a graph
// captured before the transition may still read (poisoned, its pointers would be wild: an
// illegal address instead of the wrong numbers a stale table gives). Each block once.
std::vector<BlockLedger::Entry> freed_blocks_to_poison(const std::vector<BlockLedger::Entry>& released,
                                                       const std::vector<BlockLedger::Entry>& handed_out,
                                                       const void* spared);

class TransitionAudit {
 public:
  TransitionAudit(MoeWeights& weights, DeviceAllocator& allocator, Stream& stream);

  // Around one transition (refused, rolled back or applied): before() reads the tables,
  // after() reads them again, checks them, poisons what was freed and returns how many
  // experts' entries changed.
  void before();
  std::size_t after(const std::string& label);

  bool tables_match() const { return stale_entries_ == 0; }
  const std::string& detail() const { return detail_; }
  nlohmann::json evidence() const;

 private:
  PointerTables read_tables() const;
  PointerTables expected_tables() const;

  MoeWeights& weights_;
  DeviceAllocator& allocator_;
  Stream& stream_;
  PointerTables before_;
  const void* table_array_before_ = nullptr;
  std::uint64_t mark_ = 0;
  std::size_t transitions_ = 0, stale_entries_ = 0, blocks_poisoned_ = 0, bytes_poisoned_ = 0;
  std::string detail_ = "no transition audited";
  nlohmann::json moved_ = nlohmann::json::array();
};

}  // namespace moe
