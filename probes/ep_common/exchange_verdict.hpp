#pragma once
// What a rank found when it checked its exchange (probes/ep_common/exchange_checks.hpp), as it
// travels to rank 0 in its per-rank JSON, and rank 0's checks over every rank's findings. Host
// only, so the verdict is CPU-tested.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::ep {

struct ExchangeChecks {
  bool counts_exact = false;
  bool payload_intact = false;
  bool repeatable = false;
  int rows_received = 0;
  std::string detail;  // what failed, or what was checked

  bool passed() const { return counts_exact && payload_intact && repeatable; }
  // Keys receive_counts_exact, payload_rank_coded, bitwise_repeatable, rows_received,
  // exchange_check.
  nlohmann::json to_json() const;
};

// Checks receive_counts_exact, payload_rank_coded and bitwise_repeatable over every rank's JSON
// (rank order, each with "rank" and the keys above): each passes when it passed on every rank;
// a failed one names each rank where it failed and what that rank saw. A rank whose JSON lacks
// a key fails the check, named as such.
std::vector<report::Check> exchange_checks_over_ranks(const std::vector<nlohmann::json>& ranks);

}  // namespace moe::ep
