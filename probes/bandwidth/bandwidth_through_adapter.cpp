// Probe bandwidth through an engine adapter (--engine; needs route-counts, and
// capture-safe-forward for mode graph): the same cases as with moebench's engine
// (bandwidth_probe.cpp) on an engine the probe cannot look inside. The bytes of a step come
// from the routing the adapter chose, read back as route counts over a window of that one step
// (an expert with a count was touched), so the dedup figure follows the engine's own
// tie-break. The first and the last layer are checked against the CPU reference before any
// timing; the ceilings and the roofline are as with moebench's engine (step_timing.hpp), the cuBLAS
// peer and the kernel family are moebench's and are not reported here.
#include <algorithm>

#include "engine/external/external_engine.hpp"
#include "probes/bandwidth/step_flops.hpp"
#include "probes/bandwidth/step_timing.hpp"
#include "probes/evidence.hpp"
#include "probes/external_layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

// The bytes of the step just run: a window reset before it holds its routing alone.
StepBytes count_step_bytes(external::ExternalEngine& e, int m) {
  StepBytes b;
  const kernels::MoeDims& dims = e.weights(0).dims();
  const double activations = 2.0 * m * dims.hidden * sizeof(std::uint16_t);  // x in, out
  for (int l = 0; l < e.layers(); ++l) {
    const MoeWeights& w = e.weights(l);
    const external::ExternalEngine::RouteCounts counts = e.read_route_counts(l);
    if (counts.flags)
      throw Error(ExitCode::probe_error, e.adapter().label() + ": route counts of layer " + std::to_string(l) +
                                             " flagged " + std::to_string(counts.flags) + " (overflow 1, poisoned 2)");
    int touched = dims.shared;  // every token uses the shared experts
    for (std::uint64_t n : counts.counts) touched += n > 0;
    const double fixed = static_cast<double>(w.router_bytes()) + activations;
    b.dedup += fixed + static_cast<double>(touched) * static_cast<double>(w.expert_bytes());
    b.no_dedup += fixed + static_cast<double>(m) * (dims.top_k + dims.shared) * static_cast<double>(w.expert_bytes());
    b.experts_touched.push_back(touched);
  }
  b.dedup_bf16 = b.dedup;
  return b;
}

int largest_m(std::span<const SweepPoint> points) {
  int m = 1;
  for (const SweepPoint& p : points) m = std::max(m, *p.m);
  return m;
}

}  // namespace

void run_bandwidth_through_adapter(ProbeState& state) {
  const auto& adapter = state.options().adapter;
  const StepCeilings ceilings = measure_step_ceilings(state);
  for (std::span<const SweepPoint> engine_points : runs_of(state.points(), SweepAxis::format)) {
    const Shape& shape = *engine_points.front().shape;
    const kernels::WeightFormat format = *engine_points.front().format;
    EngineConfig config = engine_config(state, shape, format, 1);
    const LayerPlan plan = plan_layers(config, state.device());  // enough layers to defeat the L2
    config.layers = plan.layers;
    external::ExternalEngine engine(adapter, config, largest_m(engine_points), state.allocator());

    for (std::span<const SweepPoint> m_points : runs_of(engine_points, SweepAxis::m)) {
      const int m = *m_points.front().m;
      const std::uint64_t input_seed = derive_seed(state.options().seed, 2, m);
      engine.set_input(m, input_seed);
      engine.reset_route_counts();
      engine.forward();
      // Correct first: the first and the last layer against the CPU reference.
      std::vector<report::Check> checks;
      for (int l : {0, engine.layers() - 1}) {
        checks.push_back(check_external_layer(engine, l, input_seed, 8)
                             .as_check("layer" + std::to_string(l) + "_matches_reference"));
        if (engine.layers() == 1) break;
      }
      const StepBytes bytes = count_step_bytes(engine, m);
      const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
      const auto eager_out = copy_to_host(engine.output(0), elements);
      const bool all_correct =
          std::all_of(checks.begin(), checks.end(), [](const report::Check& k) { return k.passed; });
      const bool asked_cold = state.sampler().options().l2 == measure::L2Mode::cold;
      for (const SweepPoint& point : m_points) {
        const std::string& mode = *point.mode;
        report::CaseResult c = state.start_case(point);
        c.parameters["l2"] = asked_cold ? "cold" : "hot";
        c.parameters["layers"] = plan.layers;
        c.parameters["input_seed"] = input_seed;
        c.checks = checks;
        c.evidence = {{"engine_adapter", {{"name", adapter->name()}, {"version", adapter->version()}}},
                      {"layers", plan.layers},
                      {"layers_wanted", plan.wanted},
                      {"layers_reduced_for_memory", plan.reduced},
                      {"experts_touched_per_layer", bytes.experts_touched},
                      {"experts_touched_from", "the adapter's route counts of the checked step"},
                      {"working_set_over_l2", bytes.dedup / static_cast<double>(state.device().l2_bytes)},
                      {"read_ceiling_bytes", ceilings.read.bytes}};
        c.prove("outputs_checked", all_correct, "an output did not match; not timed");
        if (!all_correct) {
          c.conclude("");
          state.add_case(std::move(c));
          continue;
        }
        std::function<void()> enqueue = [&] { engine.forward(); };
        if (mode == "graph") {
          if (const std::string why = engine.capture_blocker(); !why.empty()) {
            c.prove("graph_captured", false, "no graph: " + why);
            c.conclude("");
            state.add_case(std::move(c));
            continue;
          }
          engine.capture();
          enqueue = [&] { engine.replay(); };
          enqueue();
          engine.stream().drain();
          const std::size_t diff = count_differences(engine.output(0), eager_out, elements);
          c.checks.push_back({"graph_replay_bit_exact_to_eager", diff == 0,
                              std::to_string(diff) + " of " + std::to_string(elements) +
                                  " outputs differ from the eager step"});
        }
        time_step(state, c,
                  TimedStep{engine.stream(), enqueue,
                            "bandwidth/" + shape.name + "/m=" + std::to_string(m) + "/" + *c.format + "/" + mode,
                            bytes, layer_flops(shape.dims(format), m) * plan.layers, plan.layers, plan.reduced,
                            ceilings, nullptr});
        if (mode == "graph") engine.drop_graphs();
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
