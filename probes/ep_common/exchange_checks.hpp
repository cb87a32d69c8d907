#pragma once
// The checks of a sharded layer's exchange before it is timed, made as DeepEP's tests make
// theirs. Every rank feeds rank-coded rows (engine/ep/rank_coded_payload.hpp) and runs a step;
// the ranks gather what each packed, and every rank's receive buffer must hold exactly the
// rows and the per-expert pairs sent to it (engine/ep/receive_counts.hpp) and every received
// row the bits its source and token code. The same step then runs again on the same input:
// its receive buffer and its output must be the first run's bit for bit
// (engine/ep/wire_digest.hpp). Collective: every rank calls it at the same point of its loop.
// The layer's input is left rank-coded: set the next input after it.
#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rendezvous.hpp"
#include "probes/ep_common/exchange_verdict.hpp"

namespace moe::ep {

ExchangeChecks run_exchange_checks(ShardedLayer& layer, Rendezvous& rendezvous);

}  // namespace moe::ep
