#pragma once
// What every case of probe drop-after-inflight shares, with moebench's engine and through an
// adapter: how long the forward is queued behind other work, and the verdict.
#include <cstdint>

#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"

namespace moe {

// Long enough that everything the host does next happens while the forward is still queued;
// the probe checks that it did (an event still pending just before the destroy) rather than
// trusting it: a host stall or a sanitizer serialising streams can miss it.
inline constexpr std::uint64_t kQueueAheadNs = 50'000'000;  // 50 ms

// Every token is checked: a wrong pending result may touch only some of them.
inline constexpr int kAllTokens = 1 << 30;

// The verdict: the pending output was right and the device usable afterwards, and both halves
// of the hazard were forced: the work was pending at the destroy, and the next request received
// the blocks the destroy freed (INCONCLUSIVE otherwise). `owner`: "layer", "engine".
void conclude_drop_case(report::CaseResult& c, const LayerCheck& inflight, report::Check usable, bool pending,
                        const BlockReuse& reuse, const char* owner);

}  // namespace moe
