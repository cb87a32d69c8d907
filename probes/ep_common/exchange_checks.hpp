#pragma once
// The checks of a sharded layer's exchange before it is timed, made as DeepEP's tests make
// theirs. Every rank feeds rank-coded rows (engine/ep/rank_coded_payload.hpp) and runs a step;
// the ranks gather what each packed, and every rank's receive buffer must hold exactly the
// rows and the per-expert pairs sent to it (engine/ep/receive_counts.hpp) and every received
// row the bits its source and token code. The same step then runs again on the same input:
// its receive buffer and its output must be the first run's bit for bit
// (engine/ep/wire_digest.hpp). Collective: every rank calls it at the same point of its loop.
// The layer's input is left rank-coded: set the next input after it.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rendezvous.hpp"

namespace moe::ep {

struct ExchangeChecks {
  bool counts_exact = false;
  bool payload_intact = false;
  bool repeatable = false;
  int rows_received = 0;
  std::string detail;  // what failed, or what was checked

  bool passed() const { return counts_exact && payload_intact && repeatable; }
  nlohmann::json to_json() const;
};

ExchangeChecks run_exchange_checks(ShardedLayer& layer, Rendezvous& rendezvous);

}  // namespace moe::ep
