#pragma once
// The launcher's deadline for its workers, derived from the work they were given. Every wait
// of a worker is bounded by --timeout through its watchdog; the launcher's deadline only
// catches a worker whose watchdog failed, so it must never end a slow but healthy run: a
// default ep-step sweep builds 48 sharded layers and checks tokens in float64 on the CPU, far
// more than any fixed multiple of --timeout allows for.
//
// deadline = (setup waits + spare waits) x --timeout
//          + sum over cases of (waits x --timeout + host MACs / host rate
//                               + device bytes / device rate + a second)
// with rates a slow machine still reaches, so a healthy worker finishes well inside it.
#include <chrono>
#include <string>
#include <vector>

namespace moe::ep {

// One case of a worker, as far as its time goes.
struct PlannedCase {
  double host_macs = 0;     // the CPU reference's multiply-adds, weights generated on the host included
  double device_bytes = 0;  // bytes the GPU generates, copies and reads (weights, steps, checks)
  double waits = 0;         // --timeouts the case spends waiting by design (ep-hang's watchdog tests)
};

struct WorkerPlan {
  std::vector<PlannedCase> cases;
  // Before the first case: the rendezvous, the communicator's init, the environment gather.
  int setup_waits = 3;
};

// Rates a slow host core (float64 reference, counter-based weight generation) and a slow GPU
// (generation, copies, the per-row expert kernel) still reach.
inline constexpr double kSlowHostMacsPerSecond = 1e8;  // a tenth of probes/layer_check.hpp's 1e9
inline constexpr double kSlowDeviceBytesPerSecond = 100e9;
// One stalled wait the watchdog ends, and the peers' failing waits behind it.
inline constexpr int kSpareWaits = 2;

std::chrono::milliseconds worker_deadline(const WorkerPlan& plan, std::chrono::milliseconds timeout);

// "48 cases, 3.2e+11 host MACs, 9.1e+12 device bytes, 5 + 0 waits of 15 s": what a deadline
// was derived from, for the message of a worker killed at it.
std::string describe(const WorkerPlan& plan, std::chrono::milliseconds timeout);

}  // namespace moe::ep
