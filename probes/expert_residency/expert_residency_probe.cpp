// Probe `expert-residency` (docs/bugs.md, bug 6): skewed routing, a telemetry window, a plan from it
// (--hot-share, --device-budget), and the transition at a boundary. PASS when the output after
// the transition equals the all-resident output bit for bit, a transition during capture or
// under a live graph is refused, and a fault injected into a transition rolls it back with
// every expert's checksum unchanged, and after every transition the tables read back from the
// device name each expert's copy where its placement says (TransitionAudit). It times a step all-resident, with the plan, and with
// every routed expert cold, and reports the device bytes the plan saves.
#include <algorithm>

#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/weights_checksum.hpp"
#include "probes/expert_residency/transition_audit.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"
#include "reports/routing_histogram.hpp"

namespace moe {

namespace {

constexpr int kWindowCalls = 4;
// Step 2 of a transition is the second tensor of the first expert that moves: a fault there
// splits a group, the case a rollback must undo.
constexpr std::size_t kFaultStep = 2;

std::vector<std::uint64_t> checksums(Engine& e) {
  MoeLayer& layer = e.layer(0);
  const kernels::MoeDims& dims = layer.config().dims;
  const std::size_t n = static_cast<std::size_t>(dims.total_experts()) * kernels::kExpertTensors;
  DeviceAllocator plain(DeviceAllocator::Mode::plain);  // not the engine's: no reuse of freed blocks
  DeviceBuffer out = plain.allocate(n * sizeof(std::uint64_t));
  e.stream().drain();
  kernels::enqueue_expert_checksums(dims, layer.weights().resident_table(e.stream()), out.as<std::uint64_t>(),
                                    e.stream().handle());
  std::vector<std::uint64_t> host(n);
  e.stream().drain();
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), out.data(), n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  return host;
}

// Another request taking the expert blocks a transition may have freed (LIFO: those come
// first) and writing them, so a read of freed weights gives wrong numbers instead of stale
// right ones. Not the pointer tables' blocks: garbage pointers would end the run in an illegal
// address (a sticky error, an ERROR verdict) instead of the FAIL the bug deserves.
struct FreedBlockWriter {
  std::vector<DeviceBuffer> blocks;
  FreedBlockWriter(DeviceAllocator& allocator, const kernels::MoeDims& dims, int count, Stream& stream) {
    const std::size_t sizes[] = {kernels::expert_weight_bytes(dims, kernels::TensorKind::gate_up),
                                 kernels::expert_weight_bytes(dims, kernels::TensorKind::down),
                                 kernels::expert_scale_bytes(dims, kernels::TensorKind::gate_up),
                                 kernels::expert_scale_bytes(dims, kernels::TensorKind::down)};
    for (int i = 0; i < count; ++i)
      for (std::size_t bytes : sizes) {
        if (!bytes) continue;
        blocks.push_back(allocator.allocate(bytes));
        MOE_CUDA_CHECK(cudaMemsetAsync(blocks.back().data(), 0x7F, bytes, stream.handle()));
      }
    stream.drain();
  }
};

std::size_t differing(Engine& e, const std::vector<std::uint16_t>& reference) {
  e.stream().drain();
  return count_differences(e.output(0), reference, reference.size());
}

report::Measurement time_step(ProbeState& state, Engine& e, const std::string& label) {
  e.drop_graphs();
  e.forward();
  e.capture();
  report::Measurement m = state.sampler().measure(e.stream(), label, [&] { e.replay(); });
  e.stream().drain();
  e.drop_graphs();
  return m;
}

std::string placement_text(const std::vector<Placement>& p) {
  std::string s;
  for (Placement x : p) s += x == Placement::device ? 'D' : 'h';
  return s;
}

}  // namespace

extern const SweepDeclaration expert_residency_sweep;
const SweepDeclaration expert_residency_sweep{.cases = {"transition"},
                                              .shapes = {"deepseek-v2-lite"},
                                              .ms = {8},
                                              .formats = kBf16Only,
                                              .modes = ModeAxis::fixed,
                                              .fixed_mode = "graph"};

void run_expert_residency_probe(ProbeState& state) {
  ResidencyPolicy policy;
  policy.hot_share = state.options().hot_share;
  policy.budget_bytes = state.options().device_budget;
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    auto seed = [&](int purpose) { return derive_seed(state.options().seed, 90 + purpose, m); };
    EngineConfig config = engine_config(state, shape, format, 91, 1);
    config.routing = Routing::skewed;
    Engine e(config, state.allocator(), state.device());
    const kernels::MoeDims dims = shape.dims(format);
    const std::size_t expert_bytes = e.layer(0).weights().expert_bytes();
    const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
    // Every transition below is audited: its tables read back and checked, what it freed poisoned.
    TransitionAudit audit(e.layer(0).weights(), state.allocator(), e.stream());
    auto transition = [&](const ResidencyPlan& p, const std::string& label, ResidencyFaultPoint fault = {}) {
      audit.before();
      try {
        e.apply_residency(0, p, fault);
      } catch (...) {
        audit.after(label);
        throw;
      }
      return audit.after(label);
    };

    // 1. All resident: the reference output, and its step time. Armed from the start, so
    //    the three timings pay the same route telemetry.
    e.arm_telemetry();
    e.set_input(m, seed(0));
    e.forward();
    c.checks.push_back(check_layer_output(e.layer(0), e.output(0), m, seed(0)).as_check("all_resident_matches_reference"));
    const std::vector<std::uint16_t> reference = copy_to_host(e.output(0), elements);
    const std::vector<std::uint64_t> sums0 = checksums(e);
    report::Measurement resident = time_step(state, e, "expert-residency/" + shape.name + "/all-resident");

    // 2. A telemetry window of its own and the plan.
    e.reset_telemetry_at_boundary();
    for (int i = 0; i < kWindowCalls; ++i) {
      e.set_input(m, seed(1 + i));
      e.forward();
    }
    std::vector<TelemetryWindow> windows = e.telemetry_windows();
    const WindowCheck verdict = validate_window(windows[0], e.telemetry_identity(0), e.telemetry_epochs().epoch());
    const ResidencyPlan plan = plan_residency(windows[0], verdict, expert_bytes, policy);
    if (state.options().histogram) {
      report::RoutingHistogram h;
      h.window = std::to_string(kWindowCalls) + " eager calls, skewed routing";
      h.epoch = windows[0].epoch;
      h.layers.push_back({0, windows[0].total, std::vector<std::uint64_t>(windows[0].counts.begin(), windows[0].counts.end())});
      report::add_histogram(c, h);
    }
    c.evidence["plan"] = {{"hot", plan.hot()}, {"cold", plan.cold()}, {"fallback", plan.fallback},
                          {"reason", plan.reason}, {"placement", placement_text(plan.placement)},
                          {"hot_share", policy.hot_share}, {"budget_bytes", policy.budget_bytes}};
    const std::vector<Placement> before = e.layer(0).weights().placement();
    e.set_input(m, seed(0));
    // The refusals are tried with every routed expert going cold: under skewed routing the
    // plan's cold experts are the ones no token reads, and a graph replay would not notice
    // them moving; the experts every token reads must move for the hazard to show.
    ResidencyPlan cold = all_resident(dims.experts, "every routed expert cold");
    std::fill(cold.placement.begin(), cold.placement.end(), Placement::host);

    // 3. Refused during capture, nothing changed.
    std::string in_capture;
    try {
      CapturedGraph g(e.stream(), [&] {
        e.forward();
        try {
          e.apply_residency(0, cold);
        } catch (const BoundaryRefused& r) {
          in_capture = r.what();
        }
      });
    } catch (const std::exception& err) {
      in_capture += std::string(" (the capture failed: ") + err.what() + ")";
    }
    c.checks.push_back({"transition_refused_during_capture",
                        !in_capture.empty() && e.layer(0).weights().placement() == before,
                        in_capture.empty() ? "the transition was applied while capturing" : in_capture});

    // 4. Refused under a live graph; the graph's replay stays right after another request
    //    wrote whatever blocks a transition could have freed.
    e.forward();
    e.capture();
    e.stream().drain();
    c.prove("graph_live_during_transition", e.captured(), "no graph was captured when the transition was tried");
    std::string live;
    try {
      transition(cold, "all cold under a live graph");
    } catch (const BoundaryRefused& r) {
      live = r.what();
    }
    std::size_t live_diff = 0;
    {
      FreedBlockWriter other(state.allocator(), dims, dims.experts + 1, e.stream());
      e.replay();
      live_diff = differing(e, reference);
    }
    c.checks.push_back({"transition_refused_under_live_graph",
                        !live.empty() && e.layer(0).weights().placement() == before && live_diff == 0,
                        (live.empty() ? std::string("the transition was applied under a live graph") : live) +
                            "; replay after: " + std::to_string(live_diff) + " outputs differ from all-resident"});
    e.drop_graphs();
    if (e.layer(0).weights().placement() != before) {
      // Under the mutation the plan went in: bring the bank back for the checks below.
      transition(all_resident(dims.experts, "restore"), "restore after the live graph");
    }

    // 5. A fault at step 2 (inside the first group) rolls everything back.
    std::string fault;
    if (plan.cold() > 0) {
      try {
        transition(plan, "plan with a fault at step " + std::to_string(kFaultStep), {kFaultStep});
      } catch (const ResidencyFault& f) {
        fault = f.what();
      }
      c.prove("fault_injected", !fault.empty(), "no fault was raised at step " + std::to_string(kFaultStep));
      FreedBlockWriter other(state.allocator(), dims, plan.cold() + 1, e.stream());
      const std::vector<std::uint64_t> sums = checksums(e);
      e.forward();
      const std::size_t diff = differing(e, reference);
      const bool same_place = e.layer(0).weights().placement() == before;
      c.checks.push_back({"fault_rolls_back",
                          !fault.empty() && sums == sums0 && same_place && diff == 0,
                          (fault.empty() ? std::string("no fault raised") : fault) + "; checksums " +
                              (sums == sums0 ? "unchanged" : "changed") + ", placement " +
                              (same_place ? "unchanged" : "now " + placement_text(e.layer(0).weights().placement())) +
                              ", " + std::to_string(diff) + " outputs differ"});
    }
    if (e.layer(0).weights().placement() != before) transition(all_resident(dims.experts, "restore"), "restore after the fault");

    // 6. The plan applied: the same bits, the device bytes given back.
    const std::size_t in_use0 = state.allocator().stats().bytes_in_use;
    const auto counters0 = e.layer(0).weights().residency_counters();
    const std::size_t moved = transition(plan, "plan");
    // From the tables read back before and after, not from the plan: a transition that moved
    // nothing exercised nothing.
    c.prove("experts_moved", moved > 0,
            "the tables read back name the same copies before and after the plan (" + std::to_string(plan.cold()) +
                " experts planned cold, " + plan.reason + "): nothing moved, the rollback was not exercised");
    c.evidence["experts_moved_by_plan"] = {{"measured_from_tables", moved}, {"planned", plan.cold()}};
    const std::size_t in_use1 = state.allocator().stats().bytes_in_use;
    e.forward();
    const std::size_t plan_diff = differing(e, reference);
    const bool planned = e.layer(0).weights().placement() == plan.placement;
    c.checks.push_back({"planned_output_identical", plan_diff == 0 && planned && checksums(e) == sums0,
                        std::to_string(plan.cold()) + " experts cold: " + std::to_string(plan_diff) +
                            " outputs differ from all-resident" + (planned ? "" : "; the plan was not applied")});
    report::Measurement with_plan = time_step(state, e, "expert-residency/" + shape.name + "/planned");
    const std::size_t saved = in_use0 > in_use1 ? in_use0 - in_use1 : 0;

    // 7. Every routed expert cold: still the same bits; then all back.
    transition(cold, "all cold");
    e.forward();
    const std::size_t cold_diff = differing(e, reference);
    c.checks.push_back({"all_cold_output_identical", cold_diff == 0,
                        std::to_string(cold_diff) + " outputs differ with all " + std::to_string(dims.experts) +
                            " routed experts in host memory"});
    report::Measurement all_cold = time_step(state, e, "expert-residency/" + shape.name + "/all-cold");
    transition(all_resident(dims.experts, "restore"), "restore");
    const auto counters1 = e.layer(0).weights().residency_counters();

    c.checks.push_back({"tables_match_placement", audit.tables_match(), audit.detail()});
    c.evidence["transitions"] = audit.evidence();
    c.metrics["all_resident_gpu_us"] = {resident.gpu_time().median, "us"};
    c.metrics["planned_gpu_us"] = {with_plan.gpu_time().median, "us"};
    c.metrics["all_cold_gpu_us"] = {all_cold.gpu_time().median, "us"};
    c.metrics["device_bytes_saved"] = {static_cast<double>(saved), "B"};
    c.metrics["hot_experts"] = {static_cast<double>(plan.hot()), ""};
    c.metrics["cold_experts"] = {static_cast<double>(plan.cold()), ""};
    c.evidence["allocator"] = {{"bytes_in_use_before_plan", in_use0}, {"bytes_in_use_with_plan", in_use1}};
    c.evidence["residency_counters"] = {
        {"device_bytes_released", counters1.device_bytes_released - counters0.device_bytes_released},
        {"device_bytes_taken_back", counters1.device_bytes_taken_back - counters0.device_bytes_taken_back},
        {"transitions", counters1.transitions}, {"rollbacks", counters1.rollbacks}};
    c.measurements["main"] = std::move(with_plan);
    c.measurements["all_resident"] = std::move(resident);
    c.measurements["all_cold"] = std::move(all_cold);
    c.reason = plan.reason;
    c.conclude_from_checks();
    state.add_case(std::move(c));
  }
}

}  // namespace moe
