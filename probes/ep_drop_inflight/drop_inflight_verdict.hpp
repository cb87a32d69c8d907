#pragma once
// Probe ep-drop-inflight's judgement as plain host code, so the CPU tests check it over
// fabricated ranks (tests/cpu/test_ep_drop_inflight.cpp). Each rank reports what it saw of the
// race it forced (RankObservation, as JSON through the rendezvous); rank 0 turns every rank's
// report into the case's checks and forcing evidence.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::ep {

struct RankObservation {
  int rank = 0;
  std::vector<const void*> receive_buffers;  // the dropped layer's dispatch and combine receive
  std::vector<const void*> successor_blocks; // what the next owner received while it was pending
  bool pending_at_drop = false;              // the step's event, just before the drop
  bool pending_after_successor = false;      // the same event, after the successor wrote its bytes
  std::size_t successor_bytes = 0;           // bytes the successor wrote and read back
  std::size_t successor_bytes_changed = 0;   // of those, changed under it (by the exchange)
  // Blocks of the receive buffers that an allocation after the step had finished received:
  // the allocator does hand these blocks out again, so the hazard was real.
  std::size_t receive_blocks_reused_after_completion = 0;
  bool output_matches = false;  // the dropped step's output, copied behind it, against the reference
  std::string output_detail;
};

// The receive buffers of `o` that the successor received (address equality).
std::vector<const void*> receive_blocks_handed_out_while_pending(const RankObservation& o);

nlohmann::json observation_json(const RankObservation& o);

// Checks (each over every rank): no_receive_block_handed_out_while_pending,
// successor_bytes_intact, inflight_output_matches_reference. Evidence proven:
// every_rank_answered, exchange_pending_at_drop, exchange_pending_while_successor_wrote,
// receive_blocks_handed_out_again (while pending or after completion). `ranks` is every
// rank's observation_json, in rank order; `world` the ranks expected.
void judge_drop_inflight(report::CaseResult& c, const std::vector<nlohmann::json>& ranks, int world);

}  // namespace moe::ep
