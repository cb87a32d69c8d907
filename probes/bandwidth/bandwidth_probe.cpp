// Probe `bandwidth`: one decode step of the engine (every layer over the same input) per
// shape, M, weight format and mode; GPU-event, host-enqueue and CUPTI kernel time; bytes with
// and without expert dedup; GB/s and percent of the read ceiling measured in the same run.
// Each configuration's output is checked against the CPU reference before it is timed.
// A figure counts only with the L2 defeated (docs/bugs.md, bug 4): a flush before every sample, or a
// step whose distinct weights are at least 4x the L2. Asked for cold (the default), a figure
// without either is a FAIL of cold_figure_defeats_l2 (the harness measured the cache); asked
// for hot (--l2 hot), the case is named step-l2-hot, so it is never compared with a cold one,
// and is INCONCLUSIVE unless its working set alone defeats the L2. Unconverged or throttled
// sampling is flagged in the reason. With the peer (--peer cublas, and the default suite where the
// library loads) cuBLAS's grouped GEMM over the same experts and tokens is timed beside each
// configuration (cublas_peer.hpp).
#include <optional>
#include <sstream>

#include "engine/engine.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/stream_plan.hpp"
#include "probes/bandwidth/cublas_peer.hpp"
#include "probes/bandwidth/step_timing.hpp"
#include "probes/bandwidth/step_flops.hpp"
#include "probes/copy/read_ceiling.hpp"
#include "probes/evidence.hpp"
#include "probes/evidence_rules.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

StepBytes count_step_bytes(Engine& engine, int m) {
  StepBytes b;
  const kernels::MoeDims dims = engine.layer(0).config().dims;
  const double activations = 2.0 * m * dims.hidden * sizeof(std::uint16_t);  // x in, out
  kernels::MoeDims bf16 = dims;
  bf16.format = kernels::WeightFormat::bf16;
  const double bf16_expert = static_cast<double>(
      kernels::expert_weight_bytes(bf16, kernels::TensorKind::gate_up) +
      kernels::expert_weight_bytes(bf16, kernels::TensorKind::down));
  for (int l = 0; l < engine.layers(); ++l) {
    const MoeWeights& w = engine.layer(l).weights();
    const auto ids = read_topk_ids(engine.layer(l), m, engine.stream());
    const auto touched = touched_experts(dims, ids);
    const double fixed = static_cast<double>(w.router_bytes()) + activations;
    b.dedup += fixed + static_cast<double>(touched.size() * w.expert_bytes());
    b.dedup_bf16 += fixed + static_cast<double>(touched.size()) * bf16_expert;
    b.no_dedup += fixed + static_cast<double>(m) * (dims.top_k + dims.shared) *
                              static_cast<double>(w.expert_bytes());
    b.experts_touched.push_back(static_cast<int>(touched.size()));
  }
  return b;
}

// Which expert GEMM kernels the engine's forward of m tokens runs, so a report says which
// kernels its figure is of.
kernels::ExpertGemmKernels expert_gemm_kernels(Engine& engine, int m, const Device& device) {
  return engine.layer(0).expert_gemm_kernels(m, device.props.major * 10 + device.props.minor);
}

// Hot and cold figures are different measurements: different names, so different keys, so
// `compare` never pairs one with the other.
std::vector<std::string> step_case(const RunOptions& options) {
  return {options.measure.l2 == measure::L2Mode::cold ? "step" : "step-l2-hot"};
}

}  // namespace

extern const SweepDeclaration bandwidth_sweep;
const SweepDeclaration bandwidth_sweep{.cases = {"step"},
                                       .shapes = kDefaultMoeShapes,
                                       .ms = {1, 2, 4, 8, 16, 64},
                                       .formats = kBothFormats,
                                       .modes = ModeAxis::axis,
                                       .cases_for = &step_case};

// Through an engine adapter (--engine): bandwidth_through_adapter.cpp.
void run_bandwidth_through_adapter(ProbeState& state);

void run_bandwidth_probe(ProbeState& state) {
  if (state.options().adapter) return run_bandwidth_through_adapter(state);
  // The ceilings every figure is divided by, measured in this run.
  const StepCeilings ceilings = measure_step_ceilings(state);
  const ReadCeiling& ceiling = ceilings.read;
  // The vendor peer, when asked for: by name it must load (the CLI checked before any device
  // work); in the default suite a missing library is said in each case's evidence.
  std::optional<CublasPeer> peer;
  if (state.options().peer == Peer::cublas) {
    kernels::peer::CublasAvailability cublas = kernels::peer::find_cublas();
    if (!cublas.library && state.options().peer_required)
      throw EnvironmentError("--peer cublas: " + cublas.missing_message());
    peer.emplace(std::move(cublas));
  }

  // One engine per shape and format, one input per M, one case per mode.
  for (std::span<const SweepPoint> engine_points : runs_of(state.points(), SweepAxis::format)) {
    const Shape& shape = *engine_points.front().shape;
    const kernels::WeightFormat format = *engine_points.front().format;
    Engine engine(engine_config(state, shape, format, 1), state.allocator(), state.device());
    const LayerPlan& plan = engine.plan();

    for (std::span<const SweepPoint> m_points : runs_of(engine_points, SweepAxis::m)) {
      const int m = *m_points.front().m;
      const std::uint64_t input_seed = derive_seed(state.options().seed, 2, m);
      engine.set_input(m, input_seed);
      engine.forward();
      // Correct first: the first and the last layer against the CPU reference.
      std::vector<report::Check> checks;
      for (int l : {0, engine.layers() - 1}) {
        checks.push_back(check_layer_output(engine.layer(l), engine.output(l), m, input_seed)
                             .as_check("layer" + std::to_string(l) + "_matches_reference"));
        if (engine.layers() == 1) break;
      }
      const StepBytes bytes = count_step_bytes(engine, m);
      const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
      const auto eager_out = copy_to_host(engine.output(0), elements);
      const bool all_correct = std::all_of(checks.begin(), checks.end(),
                                           [](const report::Check& k) { return k.passed; });
      // Measured once a configuration, eagerly, and reported beside each mode's figure.
      std::optional<PeerFigure> peer_figure;
      if (peer && all_correct)
        peer_figure = peer->measure(state, engine, m, bytes.dedup_bf16,
                                    "bandwidth/" + shape.name + "/m=" + std::to_string(m) + "/" +
                                        std::string(kernels::to_string(format)) + "/cublas");

      const bool asked_cold = state.sampler().options().l2 == measure::L2Mode::cold;
      for (const SweepPoint& point : m_points) {
        const std::string& mode = *point.mode;
        report::CaseResult c = state.start_case(point);  // step, or step-l2-hot (step_case)
        c.parameters["l2"] = asked_cold ? "cold" : "hot";
        c.checks = checks;
        c.parameters["layers"] = plan.layers;
        c.parameters["input_seed"] = input_seed;
        const kernels::ExpertGemmKernels gemm = expert_gemm_kernels(engine, m, state.device());
        c.evidence = {{"layers", plan.layers},
                      {"layers_wanted", plan.wanted},
                      {"layers_reduced_for_memory", plan.reduced},
                      {"experts_touched_per_layer", bytes.experts_touched},
                      {"working_set_over_l2", bytes.dedup / static_cast<double>(state.device().l2_bytes)},
                      {"cache_policy", "L2 " + std::string(measure::to_string(
                                                   state.sampler().options().l2)) +
                                           "; " + std::to_string(plan.layers) +
                                           " layers of distinct weights per step"},
                      {"read_ceiling_bytes", ceiling.bytes},
                      {"expert_gemm", kernels::to_string(gemm)}};
        if (gemm == kernels::ExpertGemmKernels::stream) {  // 16-row tiles a unit (stream_plan.hpp)
          const kernels::MoeDims& d = engine.layer(0).config().dims;
          const bool int4 = d.format == kernels::WeightFormat::int4;
          c.evidence["stream_unit_tiles"] = {
              {"gate_up", kernels::stream::unit_tiles(int4, m, d.top_k, d.experts,
                                                      kernels::stream::expert_tiles(true, d.hidden, d.inter))},
              {"down", kernels::stream::unit_tiles(int4, m, d.top_k, d.experts,
                                                   kernels::stream::expert_tiles(false, d.hidden, d.inter))}};
        }
        if (engine.layer(0).config().dims.format == kernels::WeightFormat::int4)  // where the weights sit
          c.evidence["int4_layout"] = std::string(kernels::to_string(engine.layer(0).weights().int4_layout()));
        else
          c.evidence["bf16_layout"] = std::string(kernels::to_string(engine.layer(0).weights().bf16_layout()));
        c.prove("outputs_checked", all_correct, "an output did not match; not timed");
        if (!all_correct) {
          c.conclude("");  // a failed check: FAIL, "not timed" in the evidence
          state.add_case(std::move(c));
          continue;
        }
        std::function<void()> enqueue = [&] { engine.forward(); };
        if (mode == "graph") {
          engine.capture();
          enqueue = [&] { engine.replay(); };
          enqueue();
          engine.stream().drain();
          const std::size_t diff = count_differences(engine.output(0), eager_out, elements);
          c.checks.push_back({"graph_replay_bit_exact_to_eager", diff == 0,
                              std::to_string(diff) + " of " + std::to_string(elements) +
                                  " outputs differ from the eager step"});
        }
        const std::string label = "bandwidth/" + shape.name + "/m=" + std::to_string(m) + "/" +
                                  *c.format + "/" + mode;
        TimedStep step{engine.stream(), enqueue, label, bytes, layer_flops(engine.layer(0).config().dims, m) * plan.layers,
                       plan.layers, plan.reduced, ceilings, nullptr};
        if (peer_figure)
          step.beside = [&](report::CaseResult& k, double median_us) {
            peer_figure->add_to(k, median_us, plan.layers, state.options().peer_required);
          };
        time_step(state, c, step);
        if (mode == "graph") engine.drop_graphs();
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
