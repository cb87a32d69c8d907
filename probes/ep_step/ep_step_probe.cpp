// Probe ep-step: one expert-parallel decode step of a real shape over the workers' GPUs, per
// tokens per rank and exchange: route, dispatch (pack + exchange), expert compute and combine
// (return exchange + combine) GPU time per rank, host enqueue time, bytes on the wire and the
// exchanges' GB/s against the alltoall ceiling measured in the same run. Times are reported
// only after every rank's output matched the single-device CPU reference. Mode graph (--mode;
// default eager and graph) captures the steady step once and replays it: the step's GPU time
// and the launch's host time per rank, and the output of a replay on input the capture never
// saw checked the same way. The exchanges (--exchange): alltoall (where the loaded NCCL has it)
// and sendrecv by default; lsa, NCCL's device API, only when named. Before any of that, each
// layer's exchange is checked on rank-coded rows (exact receive counts per source and expert,
// every row its source's, bitwise repeats: probes/ep_common/exchange_checks.hpp), and the
// ranks meet at a barrier before every timed repetition (engine/ep/rep_barrier.hpp).
#if MOEBENCH_HAVE_NCCL
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "common/errors.hpp"
#include "engine/captured_graph.hpp"
#include "engine/ep/exchange_names.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/ep/nccl/lsa_exchange.hpp"
#include "engine/ep/nccl/nccl_library.hpp"
#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rank_output_check.hpp"
#include "engine/ep/rep_barrier.hpp"
#include "engine/stream.hpp"
#include "probes/ep_common/bus_bandwidth.hpp"
#include "probes/ep_common/ep_worker.hpp"
#include "probes/ep_common/exchange_checks.hpp"
#include "probes/ep_common/link_ceiling.hpp"
#include "probes/ep_common/planned_work.hpp"
#include "probes/ep_common/step_kernel_times.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

const std::vector<const char*> kEpShapes{"deepseek-v3", "qwen3-30b-a3b", "deepseek-v2-lite"};
const std::vector<int> kEpTokens{1, 8, 32, 128};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// --exchange as named (validated by the CLI), else the default set. lsa stays out of that set
// until it has passed on GPUs; named, it runs, or is refused with the reason (exit 3).
std::vector<ep::ExchangeKind> exchanges(const RunOptions& options) {
  std::vector<ep::ExchangeKind> k;
  for (const std::string& name : options.exchanges) k.push_back(ep::exchange_kind_from(name));
  if (!k.empty()) return k;
  for (std::string_view name : ep::default_exchange_names())
    if (name != "alltoall" || ep::nccl().AlltoAll) k.push_back(ep::exchange_kind_from(name));
  return k;
}

// Its cases are decided as it runs (no declared sweep): --mode, else eager and graph.
std::vector<std::string> modes_of(const RunOptions& options) {
  return options.modes.empty() ? std::vector<std::string>{"eager", "graph"} : options.modes;
}

ep::WorkerPlan ep_step_plan(const ProbeState& state, int ranks) {
  std::vector<kernels::MoeDims> dims;
  for (const Shape& shape : shapes_or_default(state, kEpShapes)) dims.push_back(shape.dims(kernels::WeightFormat::bf16));
  return ep::ep_step_plan(dims, ms_or_default(state, kEpTokens), static_cast<int>(exchanges(state.options()).size()),
                          static_cast<int>(modes_of(state.options()).size()), ranks);
}

void ep_step_body(ep::EpWorker& w) {
  ProbeState& state = w.state();
  const std::vector<ep::ExchangeKind> kinds = exchanges(state.options());
  // A library that cannot run lsa is refused before anything is measured (exit 3); ranks that
  // are not one LSA team are refused as the first lsa layer is built, on every rank at once.
  if (std::find(kinds.begin(), kinds.end(), ep::ExchangeKind::lsa) != kinds.end())
    if (const std::string problem = ep::lsa_library_problem(ep::nccl()); !problem.empty())
      throw EnvironmentError("ep-step: exchange lsa: " + problem);
  Stream stream(Stream::SyncPolicy::eager);
  // CUPTI kernel times beside the event times, per rank and repetition. CUPTI takes one
  // subscriber a process (Nsight, compute-sanitizer): without it the events alone are reported.
  std::unique_ptr<measure::KernelActivity> activity;
  try {
    activity = std::make_unique<measure::KernelActivity>();
  } catch (const Error& e) {
    std::fprintf(stderr, "moebench: rank %d: kernel timing off: %s\n", w.rank(), e.what());
  }
  // The ceiling first, on the same communicator: what the exchanges are measured against.
  const ep::LinkSample ceiling =
      ep::measure_alltoall(w.comm(), state.allocator(), ep::kEpStepCeilingBytes, ep::kEpStepCeilingReps,
                           stream.handle());
  const std::vector<std::string> modes = modes_of(state.options());
  for (const Shape& shape : shapes_or_default(state, kEpShapes)) {
    const kernels::MoeDims dims = shape.dims(kernels::WeightFormat::bf16);
    const ep::ExpertMap map = ep::ExpertMap::contiguous(dims.experts, w.world());
    for (int m : ms_or_default(state, kEpTokens))
      for (ep::ExchangeKind kind : kinds) {
        ep::ShardedLayerConfig cfg;
        cfg.dims = dims;
        cfg.seed = derive_seed(state.options().seed, 0xE9);
        cfg.m = m;
        cfg.options = state.options().engine.forward();  // the engine switches, ep-compute among them
        cfg.exchange = kind;
        for (const std::string& mode : modes) {
          const bool graph = mode == "graph";
          nlohmann::json mine{{"rank", w.rank()}, {"device", state.device().index}};
          {
            ep::ShardedLayer layer(cfg, map, w.comm(), w.rendezvous(), state.allocator(), stream.handle());
            // The exchange itself first: exact counts, rank-coded rows, bitwise repeats.
            mine.update(ep::run_exchange_checks(layer, w.rendezvous()).to_json());
            layer.generate_input(w.rank() * m);
            layer.enqueue_step(false);
            layer.finish("the checked step");
            for (int i = 0; i < ep::kEpStepWarmup; ++i) {
              layer.enqueue_step(false);
              layer.finish("a warm-up step");
            }
            // Graph mode: the steady step captured once (fixed sizes, enqueue-only, counts in the
            // block headers), then replayed; its output is checked after the replays, with an
            // input the capture never saw, so a replay that reused captured counts is caught. Thread
            // scope: the rank's watchdog and rendezvous threads must not invalidate it.
            std::unique_ptr<CapturedGraph> captured;
            if (graph) {
              captured = std::make_unique<CapturedGraph>(stream, [&] { layer.enqueue_step(false); }, CaptureScope::thread);
              mine["graph_nodes"] = captured->nodes();
            }
            std::vector<double> route, dispatch, compute, combine, step, host;
            std::vector<double> kernel_busy, exchange_kernel, other_kernel;  // CUPTI, per rep
            // Timed enqueues that found the communicator in progress, and the host time they
            // polled for: that much host sleep sits inside the eager dispatch and combine times.
            long long enqueue_waits = 0;
            double enqueue_wait_us = 0;
            CudaEvent start, stop;
            const std::string loop = shape.name + " m=" + std::to_string(m) + " " +
                                     std::string(ep::to_string(kind)) + " " + mode;
            for (int i = 0; i < ep::kEpStepReps; ++i) {
              // Every rank enqueues the rep together: its times are not its peers' launch lag.
              ep::rep_barrier(w.rendezvous(), loop, i);
              // The stream is idle here (the last rep finished): the window holds this rep only.
              if (activity) activity->begin_window(true);
              auto kernel_times = [&] {
                if (!activity) return;
                const ep::StepKernelTimes k = ep::step_kernel_times(activity->end_window().records);
                kernel_busy.push_back(k.busy_us);
                exchange_kernel.push_back(k.exchange_busy_us);
                other_kernel.push_back(k.other_busy_us);
              };
              if (graph) {
                start.record(stream.handle());
                const auto t0 = std::chrono::steady_clock::now();
                captured->replay(stream);
                host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
                stop.record(stream.handle());
                layer.finish("a replayed step");
                kernel_times();
                step.push_back(1000.0 * stop.elapsed_ms_since(start));
                continue;
              }
              const ep::Communicator::EnqueueWaits before = w.comm().enqueue_waits();
              const auto t0 = std::chrono::steady_clock::now();
              layer.enqueue_step(true);
              host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
              const ep::Communicator::EnqueueWaits after = w.comm().enqueue_waits();
              enqueue_waits += after.count - before.count;
              enqueue_wait_us += after.us - before.us;
              const ep::StepTimes t = layer.finish("a timed step");
              kernel_times();
              route.push_back(t.route_us);
              dispatch.push_back(t.dispatch_us);
              compute.push_back(t.compute_us);
              combine.push_back(t.combine_us);
              step.push_back(t.route_us + t.dispatch_us + t.compute_us + t.combine_us);
            }
            if (graph) {
              // New rows under the same graph: other routes, other counts in the headers.
              layer.generate_input(w.world() * m + w.rank() * m);
              captured->replay(stream);
              layer.finish("the checked replay");
            }
            const ep::RankOutputCheck check = ep::check_rank_output(
                dims, cfg.seed, layer.input_host(), layer.output_host(), m, affordable_tokens(dims, m));
            mine["passed"] = check.passed;
            mine["rel_l2"] = check.rel_l2;
            mine["check"] = check.detail;
            mine["tokens_checked"] = check.tokens_checked;
            if (check.passed) {
              if (!graph) {
                const double dispatch_us = median(dispatch), combine_us = median(combine);
                mine["route_us"] = median(route);
                mine["dispatch_us"] = dispatch_us;
                mine["compute_us"] = median(compute);
                mine["combine_us"] = combine_us;
                // The collectives move the fixed blocks; lsa only the headers and rows in them.
                // Both in nccl-tests' alltoall terms, as the ceiling: bus bandwidth over bus.
                const double moved = static_cast<double>(
                    kind == ep::ExchangeKind::lsa ? layer.wire_bytes_sent() : layer.exchanged_bytes());
                const double bus_gbps = ep::alltoall_bus_gbps(moved, dispatch_us + combine_us, w.world());
                mine["exchange_gbps"] = ep::alltoall_algorithm_gbps(moved, dispatch_us + combine_us);
                mine["exchange_bus_gbps"] = bus_gbps;
                mine["ceiling_bus_gbps"] = ceiling.bus_gbps;
                mine["share_of_ceiling"] = ep::share_of_ceiling(bus_gbps, ceiling.bus_gbps);
                mine["timed_enqueue_waits"] = enqueue_waits;
                mine["timed_enqueue_wait_us"] = enqueue_wait_us;
              }
              mine["step_us"] = median(step);
              if (!kernel_busy.empty()) {
                mine["kernel_busy_us"] = median(kernel_busy);
                mine["exchange_kernel_us"] = median(exchange_kernel);
                mine["other_kernel_us"] = median(other_kernel);
              }
              mine["host_enqueue_us"] = median(host);
              mine["wire_bytes"] = layer.wire_bytes_sent();
              mine["exchanged_bytes"] = layer.exchanged_bytes();
            }
          }
          const std::vector<nlohmann::json> ranks = w.gather(mine);
          if (w.rank() != 0) continue;
          report::CaseResult c = moe_case(state, std::string(ep::to_string(kind)), shape,
                                          kernels::WeightFormat::bf16, m, mode);
          c.require({"outputs_checked"});
          bool ok = true;
          std::string detail;
          for (const auto& r : ranks) {
            ok = ok && r["passed"].get<bool>();
            detail += (detail.empty() ? "" : "; ") + ("rank " + std::to_string(r["rank"].get<int>()) + ": " + r["check"].get<std::string>());
          }
          c.checks.push_back({"output_matches_reference", ok, detail});
          c.prove("outputs_checked", ok, "an output did not match the reference");
          // The exchange's own checks, per rank (probes/ep_common/exchange_checks.hpp).
          bool exchange_ok = true;
          for (report::Check& check : ep::exchange_checks_over_ranks(ranks)) {
            exchange_ok = exchange_ok && check.passed;
            c.checks.push_back(std::move(check));
          }
          ok = ok && exchange_ok;
          // A graph's parts are not timed apart: the step's GPU time and the launch's host time.
          if (ok && graph)
            ep::add_rank_summary(c, ranks, {{"step_us", "us"}, {"host_enqueue_us", "us"}, {"wire_bytes", "bytes"},
                                            {"kernel_busy_us", "us"}, {"exchange_kernel_us", "us"},
                                            {"other_kernel_us", "us"}});
          else if (ok)
            ep::add_rank_summary(c, ranks, {{"route_us", "us"}, {"dispatch_us", "us"}, {"compute_us", "us"},
                                            {"combine_us", "us"}, {"step_us", "us"}, {"host_enqueue_us", "us"},
                                            {"kernel_busy_us", "us"}, {"exchange_kernel_us", "us"},
                                            {"other_kernel_us", "us"},
                                            {"wire_bytes", "bytes"}, {"exchange_gbps", "GB/s"},
                                            {"exchange_bus_gbps", "GB/s"}, {"share_of_ceiling", "ratio"},
                                            {"timed_enqueue_waits", "count"}, {"timed_enqueue_wait_us", "us"}});
          else
            c.evidence["per_rank"] = ranks;
          c.parameters["ranks"] = w.world();
          c.parameters["exchange"] = std::string(ep::to_string(kind));
          c.parameters["map"] = map.describe();
          c.conclude(graph ? "the captured step, replayed on new input, matched the reference on every rank; "
                             "times per rank"
                           : "output matched the reference on every rank; times per rank");
          state.add_case(std::move(c));
        }
      }
  }
}

}  // namespace

void run_ep_step_probe(ProbeState& state) { ep::run_ep_probe(state, &ep_step_body, &ep_step_plan); }

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_step_probe(ProbeState&) { ep::ep_not_built("ep-step"); }
}  // namespace moe
#endif
