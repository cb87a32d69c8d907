// Probe ep-ceiling: the link's ceilings in one run over the workers' GPUs: ncclAlltoAll bus
// bandwidth over a large buffer, and each pair of ranks exchanging a large buffer both ways.
// These are what ep-step's dispatch and combine are measured against.
#if MOEBENCH_HAVE_NCCL
#include "common/cuda_check.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/stream.hpp"
#include "probes/ep_common/ep_worker.hpp"
#include "probes/ep_common/link_ceiling.hpp"
#include "probes/ep_common/planned_work.hpp"

namespace moe {

namespace {

constexpr int kReps = 20;

std::size_t ceiling_bytes(const ProbeState& state) {
  // --copy-bytes sizes it like the copy probe's buffer; by default 1 GiB per rank, capped so
  // both buffers fit a quarter of the free memory.
  const std::size_t asked = state.options().copy_bytes ? state.options().copy_bytes : (std::size_t{1} << 30);
  return std::min(asked, state.device().free_memory() / 8);
}

// The alltoall and every pair, at the size asked (the cap only makes them smaller).
ep::WorkerPlan ep_ceiling_plan(const ProbeState& state, int ranks) {
  const std::size_t bytes = state.options().copy_bytes ? state.options().copy_bytes : (std::size_t{1} << 30);
  ep::WorkerPlan plan;
  plan.cases.push_back(ep::link_case(bytes, kReps));
  for (int pair = 0; pair < ranks * (ranks - 1) / 2; ++pair) plan.cases.push_back(ep::link_case(bytes / 2, kReps));
  return plan;
}

void ep_ceiling_body(ep::EpWorker& w) {
  ProbeState& state = w.state();
  Stream stream(Stream::SyncPolicy::eager);
  const std::size_t bytes = ceiling_bytes(state);
  const ep::LinkSample all = ep::measure_alltoall(w.comm(), state.allocator(), bytes, kReps, stream.handle());
  const std::vector<nlohmann::json> ranks = w.gather(
      {{"rank", w.rank()}, {"device", state.device().index}, {"data_ok", all.data_ok},
       {"alltoall_us", all.median_us}, {"alltoall_bus_gbps", all.bus_gbps},
       {"alltoall_algorithm_gbps", all.algorithm_gbps}, {"bytes", all.bytes}});
  if (w.rank() == 0) {
    report::CaseResult c = state.new_case(std::string("alltoall-") + std::string(ep::to_string(ep::default_exchange_kind())));
    c.require({"data_checked"});
    bool ok = true;
    for (const auto& r : ranks) ok = ok && r["data_ok"].get<bool>();
    c.checks.push_back({"blocks_arrived_intact", ok, ok ? "every block held its (source, destination) pattern" : "a block did not"});
    c.prove("data_checked", ok, "a block arrived wrong");
    if (ok) ep::add_rank_summary(c, ranks, {{"alltoall_bus_gbps", "GB/s"}, {"alltoall_us", "us"}});
    else c.evidence["per_rank"] = ranks;
    c.parameters = {{"ranks", w.world()}, {"bytes_per_rank", all.bytes}};
    c.conclude("ncclAlltoAll bus bandwidth over " + std::to_string(w.world()) + " ranks");
    state.add_case(std::move(c));
  }
  for (int a = 0; a < w.world(); ++a)
    for (int b = a + 1; b < w.world(); ++b) {
      const ep::LinkSample p = ep::measure_pair(w.comm(), state.allocator(), a, b, bytes / 2, kReps, stream.handle());
      const std::vector<nlohmann::json> pr = w.gather({{"rank", w.rank()}, {"data_ok", p.data_ok},
                                                       {"in_pair", w.rank() == a || w.rank() == b},
                                                       {"pair_us", p.median_us}, {"pair_gbps", p.algorithm_gbps}});
      if (w.rank() != 0) continue;
      report::CaseResult c = state.new_case("pair-" + std::to_string(a) + "-" + std::to_string(b));
      c.require({"data_checked"});
      const bool ok = pr[a]["data_ok"].get<bool>() && pr[b]["data_ok"].get<bool>();
      c.checks.push_back({"pair_data_intact", ok, ok ? "both directions held the peer's pattern" : "a direction did not"});
      c.prove("data_checked", ok, "a direction arrived wrong");
      std::vector<nlohmann::json> two{pr[a], pr[b]};
      if (ok) ep::add_rank_summary(c, two, {{"pair_gbps", "GB/s"}, {"pair_us", "us"}});
      c.parameters = {{"ranks", w.world()}, {"pair", {a, b}}, {"bytes_each_way", p.bytes}};
      c.conclude("grouped ncclSend/ncclRecv both ways between ranks " + std::to_string(a) + " and " + std::to_string(b));
      state.add_case(std::move(c));
    }
}

}  // namespace

void run_ep_ceiling_probe(ProbeState& state) { ep::run_ep_probe(state, &ep_ceiling_body, &ep_ceiling_plan); }

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_ceiling_probe(ProbeState&) { ep::ep_not_built("ep-ceiling"); }
}  // namespace moe
#endif
