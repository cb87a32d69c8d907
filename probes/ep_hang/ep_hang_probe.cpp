// Probe ep-hang: the last rank joins the rendezvous and the communicator, then never takes part
// in an exchange (a rank stuck or gone mid-step). The others must end their wait within
// --timeout through the watchdog (ncclCommGetAsyncError polling, then ncclCommAbort), each
// naming its rank. Under the mutation ep-no-watchdog their wait is a plain
// cudaStreamSynchronize: they hang, and only the launcher's deadline ends them (case
// "workers", check workers_finished_within_deadline fails).
#if MOEBENCH_HAVE_NCCL
#include <chrono>

#include "common/cuda_check.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/stream.hpp"
#include "probes/ep_common/ep_worker.hpp"

namespace moe {

namespace {

void ep_hang_body(ep::EpWorker& w) {
  ProbeState& state = w.state();
  const int silent = w.world() - 1;
  nlohmann::json mine{{"rank", w.rank()}, {"silent", w.rank() == silent}, {"entered_wait", false}};
  if (w.rank() != silent) {
    Stream stream(Stream::SyncPolicy::eager);
    const std::size_t block = 1 << 20;
    DeviceBuffer send = state.allocator().allocate(block * w.world());
    DeviceBuffer recv = state.allocator().allocate(block * w.world());
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ep::enqueue_exchange(w.comm(), ep::ExchangeKind::sendrecv, send.data(), recv.data(), block, stream.handle());
      mine["entered_wait"] = true;
      w.comm().wait(stream.handle(), "an exchange with a silent rank");
      mine["finished"] = true;  // impossible: the silent rank sent nothing
    } catch (const std::exception& e) {
      mine["error"] = e.what();
    }
    mine["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // NCCL kernels of an aborted communicator have returned; the buffers can go.
    cudaStreamSynchronize(stream.handle());
  }
  // The silent rank waits here for the others' watchdogs: longer than they wait.
  const std::vector<nlohmann::json> ranks = w.gather(mine, w.timeout() * 3 + std::chrono::seconds(10));
  if (w.rank() != 0) return;
  report::CaseResult c = state.new_case("silent-rank");
  const double limit = std::chrono::duration<double>(w.timeout()).count() * 1.5 + 5;
  bool aborted = true, entered = true;
  std::string detail;
  for (const auto& r : ranks) {
    if (r["silent"].get<bool>()) continue;
    const int rank = r["rank"].get<int>();
    const std::string err = r.value("error", "");
    const double s = r.value("seconds", 0.0);
    entered = entered && r["entered_wait"].get<bool>();
    const bool ok = err.rfind("rank " + std::to_string(rank) + ": ", 0) == 0 &&
                    err.find("communicator aborted") != std::string::npos && s <= limit;
    aborted = aborted && ok;
    detail += (detail.empty() ? "" : "; ") + ("rank " + std::to_string(rank) + " after " +
                                              std::to_string(s).substr(0, 5) + " s: " +
                                              (err.empty() ? "no error" : err));
  }
  c.prove("silent_rank_joined", static_cast<int>(ranks.size()) == w.world(), "the silent rank did not report");
  c.prove("peers_waited_on_it", entered, "a peer never waited on the exchange");
  c.checks.push_back({"peers_aborted_within_timeout", aborted, detail});
  c.evidence["per_rank"] = ranks;
  c.parameters = {{"ranks", w.world()}, {"silent_rank", silent}};
  c.conclude("every peer aborted its communicator within --timeout, naming its rank");
  state.add_case(std::move(c));
}

}  // namespace

// The launcher's deadline is short: the watchdog ends a clean run within --timeout.
void run_ep_hang_probe(ProbeState& state) {
  ep::run_ep_probe(state, &ep_hang_body, 3, std::chrono::seconds(30));
}

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_hang_probe(ProbeState&) { ep::ep_not_built("ep-hang"); }
}  // namespace moe
#endif
