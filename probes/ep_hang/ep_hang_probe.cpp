// Probe ep-hang: a rank stuck or gone mid-step must not hang the others. Two cases:
//   silent-rank  the last rank joins the rendezvous and the communicator and takes part in a
//                first exchange (NCCL's connections set up), then never in another (stuck);
//   dead-rank    on a fresh communicator every rank finishes a first exchange, then the last
//                rank's process ends (no goodbye, no destructors) before its part of the second.
// The others must end their wait within --timeout through the watchdog (ncclCommGetAsyncError
// polling, then ncclCommAbort), each naming its rank. Under the mutation ep-no-watchdog their
// wait is a plain cudaStreamSynchronize: they hang in the first case, and only the launcher's
// deadline ends them (case "workers", check workers_finished_within_deadline fails).
#if MOEBENCH_HAVE_NCCL
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "common/cuda_check.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/stream.hpp"
#include "probes/ep_common/ep_worker.hpp"
#include "probes/ep_hang/peer_abort_verdict.hpp"
#include "probes/ep_hang/stuck_peer_wait.hpp"

namespace moe {

namespace {

constexpr std::size_t kBlock = 1 << 20;

// A peer's wait on an exchange the stuck rank does not join: what it saw, for the verdict.
void wait_on_stuck_rank(ep::EpWorker& w, ep::Communicator& comm, nlohmann::json& mine, const char* what) {
  Stream stream(Stream::SyncPolicy::eager);
  DeviceBuffer send = w.state().allocator().allocate(kBlock * w.world());
  DeviceBuffer recv = w.state().allocator().allocate(kBlock * w.world());
  ep::wait_on_stuck_peer(
      mine,
      [&] { ep::enqueue_exchange(comm, ep::ExchangeKind::sendrecv, send.data(), recv.data(), kBlock, stream.handle()); },
      [&] { comm.wait(stream.handle(), what); });
  // The buffers go back behind the stream's work, without waiting on it: an aborted
  // communicator's kernels return, but nothing here waits on that without a bound.
  std::vector<DeviceBuffer> buffers;
  buffers.push_back(std::move(send));
  buffers.push_back(std::move(recv));
  w.state().allocator().release_after(std::move(buffers), stream.handle());
}

double abort_limit_s(const ep::EpWorker& w) {
  return std::chrono::duration<double>(w.timeout()).count() * 1.5 + 5;
}

void silent_rank_case(ep::EpWorker& w) {
  const int silent = w.world() - 1;
  {
    // Every rank, the silent one included, exchanges once first: NCCL connects point-to-point
    // peers on first use, through every peer, so without this the peers would wait on the
    // connection set-up, not on the exchange.
    Stream stream(Stream::SyncPolicy::eager);
    DeviceBuffer send = w.state().allocator().allocate(kBlock * w.world());
    DeviceBuffer recv = w.state().allocator().allocate(kBlock * w.world());
    ep::enqueue_exchange(w.comm(), ep::ExchangeKind::sendrecv, send.data(), recv.data(), kBlock, stream.handle());
    w.comm().wait(stream.handle(), "the warm-up exchange, before a rank goes silent");
  }
  w.gather(nlohmann::json{{"rank", w.rank()}, {"connected", true}});
  nlohmann::json mine{{"rank", w.rank()}, {"silent", w.rank() == silent}, {"entered_wait", false}};
  if (w.rank() != silent) wait_on_stuck_rank(w, w.comm(), mine, "an exchange with a silent rank");
  // The silent rank waits here for the others' watchdogs: longer than they wait.
  const std::vector<nlohmann::json> ranks = w.gather(mine, w.timeout() * 3 + std::chrono::seconds(10));
  if (w.rank() != 0) return;
  report::CaseResult c = w.state().new_case("silent-rank");
  ep::judge_silent_rank(c, ranks, w.world(), silent, abort_limit_s(w));
  w.state().add_case(std::move(c));
}

void dead_rank_case(ep::EpWorker& w) {
  const int dead = w.world() - 1;
  // The first case aborted the peers' communicator: a fresh one for this case.
  std::unique_ptr<ep::Communicator> comm = w.new_communicator();
  nlohmann::json mine{{"rank", w.rank()}, {"dies", w.rank() == dead}, {"first_exchange_done", false},
                      {"entered_wait", false}};
  {
    Stream stream(Stream::SyncPolicy::eager);
    DeviceBuffer send = w.state().allocator().allocate(kBlock * w.world());
    DeviceBuffer recv = w.state().allocator().allocate(kBlock * w.world());
    ep::enqueue_exchange(*comm, ep::ExchangeKind::sendrecv, send.data(), recv.data(), kBlock, stream.handle());
    comm->wait(stream.handle(), "the first exchange, before a rank dies");
    mine["first_exchange_done"] = true;
  }
  // Every rank has its first exchange whole before one leaves: its rows may still be read
  // from its memory (NCCL's P2P read) until the receiver is done.
  w.gather(nlohmann::json{{"rank", w.rank()}, {"first_exchange_done", true}});
  if (w.rank() == dead) {
    // Mid-step: after the first exchange, before its part of the second; no destructor runs,
    // as in a crash. Exit 0 so the launcher counts it as planned, not as a failed worker.
    std::fprintf(stderr, "rank %d: leaving mid-step (probe ep-hang, case dead-rank)\n", w.rank());
    std::fflush(stderr);
    std::_Exit(0);
  }
  wait_on_stuck_rank(w, *comm, mine, "an exchange with a rank that died");
  bool closed = false;
  if (w.rank() == 0) closed = w.rendezvous().peer_closed(dead, w.timeout());
  std::vector<nlohmann::json> ranks;
  for (const std::string& s : w.rendezvous().all_gather_present(mine.dump(), {dead}, w.timeout() * 3))
    ranks.push_back(s.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(s));
  if (w.rank() != 0) return;
  report::CaseResult c = w.state().new_case("dead-rank");
  ep::judge_dead_rank(c, ranks, w.world(), dead, closed, abort_limit_s(w));
  w.state().add_case(std::move(c));
}

// Each case waits out one watchdog by design (the peers abort within 1.5 x --timeout); the
// deadline stays short, so the mutation without a watchdog is caught soon.
ep::WorkerPlan ep_hang_plan(const ProbeState&, int ranks) {
  ep::PlannedCase c;
  c.device_bytes = 2.0 * kBlock * ranks;
  c.waits = 1.5;
  return {{c, c}};
}

void ep_hang_body(ep::EpWorker& w) {
  silent_rank_case(w);
  dead_rank_case(w);
}

}  // namespace

void run_ep_hang_probe(ProbeState& state) { ep::run_ep_probe(state, &ep_hang_body, &ep_hang_plan); }

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_hang_probe(ProbeState&) { ep::ep_not_built("ep-hang"); }
}  // namespace moe
#endif
