#pragma once
// A peer's wait on an exchange that a stuck rank does not join (probe ep-hang), apart from
// NCCL so its order is tested on the CPU. The wait counts as entered before the enqueue: with
// a non-blocking communicator the enqueue itself may be where the peer waits (NCCL sets up a
// point-to-point connection, with every peer, on its first use), and the watchdog that ends
// it there is the one under test.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace moe::ep {

// Runs enqueue() then wait(), recording into `mine`: entered_wait (true before enqueue runs),
// finished (both returned: impossible with a stuck peer), error (what either threw) and
// seconds (from before the enqueue to the end).
void wait_on_stuck_peer(nlohmann::json& mine, const std::function<void()>& enqueue,
                        const std::function<void()>& wait);

}  // namespace moe::ep
