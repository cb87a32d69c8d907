// Probe `stages`: where a layer's time goes. For each shape, M, format and mode, one decode step
// of the engine (every layer over the same input) is sampled by the product's Sampler, and the
// CUPTI records of each sample are split by stage (stage_breakdown.hpp): route, gate_up, down
// and combine, each with its own duration, its share of the critical path, and its floor (the
// bytes it must read over the read ceiling of the same run). The output is checked against the
// CPU reference before anything is timed, as in probe bandwidth. A floor holds for bytes from
// memory, so a PASS needs every sample after an L2 flush; and a stage that ran no kernel in a
// sample is untimed, not 0 us: either leaves the case INCONCLUSIVE (stage_evidence.hpp).
#include <algorithm>

#include "engine/engine.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/copy/read_ceiling.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"
#include "probes/stages/stage_breakdown.hpp"
#include "probes/stages/stage_evidence.hpp"

namespace moe {

namespace {

// What the layers of one step must read, stage by stage, averaged over the layers (each layer
// routes its own tokens, so each touches its own experts).
LayerTraffic layer_traffic(Engine& engine, int m, int sm) {
  const kernels::MoeDims d = engine.layer(0).config().dims;
  using kernels::TensorKind;
  const double gate_up_expert = static_cast<double>(kernels::expert_weight_bytes(d, TensorKind::gate_up) +
                                                    kernels::expert_scale_bytes(d, TensorKind::gate_up));
  const double down_expert = static_cast<double>(kernels::expert_weight_bytes(d, TensorKind::down) +
                                                 kernels::expert_scale_bytes(d, TensorKind::down));
  const double pairs = static_cast<double>(m) * (d.top_k + d.shared);
  LayerTraffic t;
  t.router = static_cast<double>(engine.layer(0).weights().router_bytes());
  t.activations_in = static_cast<double>(m) * d.hidden * 2;
  t.h = pairs * d.inter * 2;
  const kernels::ForwardOptions& o = engine.layer(0).config().options;
  const bool bf16_rows = kernels::down_rows_in_bf16(o, engine.layer(0).expert_gemm_kernels(m, sm));
  t.down_out = pairs * d.hidden * (bf16_rows ? 2 : 4);
  double touched = 0;
  for (int l = 0; l < engine.layers(); ++l)
    touched += static_cast<double>(
        touched_experts(d, read_topk_ids(engine.layer(l), m, engine.stream())).size());
  touched /= engine.layers();
  t.gate_up_weights = touched * gate_up_expert;
  t.down_weights = touched * down_expert;
  return t;
}

report::Metric metric(double v, const char* unit) { return {v, unit}; }

}  // namespace

extern const SweepDeclaration stages_sweep;
const SweepDeclaration stages_sweep{.cases = {"layer"},
                                    .shapes = kDefaultMoeShapes,
                                    .ms = {1, 8, 64},
                                    .formats = kBothFormats,
                                    .modes = ModeAxis::axis};

void run_stages_probe(ProbeState& state) {
  const ReadCeiling ceiling = checked_read_ceiling(state);

  // One engine per shape and format, one input per M, one case per mode.
  for (std::span<const SweepPoint> engine_points : runs_of(state.points(), SweepAxis::format)) {
    const Shape& shape = *engine_points.front().shape;
    const kernels::WeightFormat format = *engine_points.front().format;
    Engine engine(engine_config(state, shape, format, 60), state.allocator(), state.device());
    const int layers = engine.plan().layers;
    for (std::span<const SweepPoint> m_points : runs_of(engine_points, SweepAxis::m)) {
      const int m = *m_points.front().m;
      const std::uint64_t input_seed = derive_seed(state.options().seed, 61, m);
      engine.set_input(m, input_seed);
      engine.forward();
      const report::Check correct =
          check_layer_output(engine.layer(0), engine.output(0), m, input_seed)
              .as_check("layer0_matches_reference");
      const int sm = state.device().props.major * 10 + state.device().props.minor;
      const StageBytes bytes = stage_bytes(layer_traffic(engine, m, sm));

      for (const SweepPoint& point : m_points) {
        const std::string& mode = *point.mode;
        report::CaseResult c = state.start_case(point);
        c.checks.push_back(correct);
        c.parameters["layers"] = layers;
        c.parameters["input_seed"] = input_seed;
        c.evidence["layers"] = layers;
        c.evidence["read_ceiling_bytes"] = ceiling.bytes;
        c.prove("outputs_checked", correct.passed, "the output did not match; not timed");
        if (!correct.passed) {
          c.conclude("");  // a failed check: FAIL
          state.add_case(std::move(c));
          continue;
        }
        std::function<void()> enqueue = [&] { engine.forward(); };
        if (mode == "graph") {
          engine.capture();
          enqueue = [&] { engine.replay(); };
        }
        std::vector<StageSample> samples;
        measure::MeasureOverrides overrides;
        overrides.kernel_records = [&](const std::vector<measure::KernelRecord>& records) {
          samples.push_back(split_by_stage(records, layers));
          // The kernels a stage ran, named once, so a reader can tell which paths ran.
          for (const measure::KernelRecord& r : records) {
            auto& names = c.evidence["kernels"][std::string(to_string(kernels::stage_of_kernel(r.name)))];
            const std::string k = kernels::short_kernel_name(r.name);
            if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
          }
        };
        const std::string label = "stages/" + shape.name + "/m=" + std::to_string(m) + "/" +
                                  *c.format + "/" + mode;
        report::Measurement meas = state.sampler().measure(engine.stream(), label, enqueue, overrides);
        if (mode == "graph") engine.drop_graphs();
        const std::size_t l2_flushes = meas.l2_flushes.value_or(0);
        c.metrics["gpu_us_per_layer"] = metric(meas.gpu_time().median / layers, "us");
        c.metrics["read_ceiling_gbps"] = metric(ceiling.gbps, "GB/s");
        c.measurements["main"] = std::move(meas);
        c.prove("kernel_records", !samples.empty(),
                "no kernel records: CUPTI is off or taken (another profiler), so no stage can "
                "be timed");
        if (samples.empty()) {
          c.conclude("");
          state.add_case(std::move(c));
          continue;
        }
        // Counted from what the sampler did and what CUPTI recorded, not from what was asked.
        const StageEvidence proof = stage_evidence(samples, l2_flushes, c.measurements["main"].l2_observed);
        c.evidence["l2_flushes"] = l2_flushes;
        c.prove("l2_cold", proof.l2_cold, proof.l2_detail);
        nlohmann::json missing = nlohmann::json::array();
        for (kernels::Stage stage : proof.stages_without_kernels) missing.push_back(to_string(stage));
        c.evidence["stages_without_kernels"] = missing;
        c.prove("every_stage_has_kernels", proof.every_stage_has_kernels, proof.kernels_detail);
        double critical_sum = 0, floor_sum = 0;
        for (kernels::Stage stage : kernels::kStages) {
          const auto i = static_cast<std::size_t>(stage);
          // A stage that ran no kernel in some sample is untimed: no 0 us figure for it.
          if (std::find(proof.stages_without_kernels.begin(), proof.stages_without_kernels.end(),
                        stage) != proof.stages_without_kernels.end())
            continue;
          std::vector<double> own, critical;
          std::size_t kernels_in_stage = 0;
          for (const StageSample& s : samples) {
            own.push_back(s.own_us[i]);
            critical.push_back(s.critical_us[i]);
            kernels_in_stage = std::max(kernels_in_stage, s.kernels[i]);
          }
          if (stage == kernels::Stage::other && kernels_in_stage == 0) continue;
          const std::string name(to_string(stage));
          const double floor_us = bytes.bytes[i] / (ceiling.gbps * 1e9) * 1e6;
          const report::Stats own_stats = report::summarize(own);
          const report::Stats crit_stats = report::summarize(critical);
          c.metrics[name + "_us"] = metric(own_stats.median, "us");
          c.metrics[name + "_critical_us"] = metric(crit_stats.median, "us");
          c.metrics[name + "_floor_us"] = metric(floor_us, "us");
          c.evidence["stage_samples"][name] = {{"own_us", own}, {"critical_us", critical},
                                               {"kernels_per_sample", kernels_in_stage},
                                               {"bytes_per_layer", bytes.bytes[i]}};
          critical_sum += crit_stats.median;
          floor_sum += floor_us;
        }
        c.metrics["critical_path_us"] = metric(critical_sum, "us");
        c.metrics["floor_us"] = metric(floor_sum, "us");
        // Every kernel of the forward must belong to a stage: one in `other` is a kernel
        // this probe does not know, and its time would be attributed to nothing.
        const bool all_known = !c.metrics.contains("other_us");
        c.checks.push_back({"every_kernel_in_a_stage", all_known,
                            all_known ? "every kernel of the step maps to route, gate_up, down "
                                        "or combine"
                                      : "kernels outside the four stages ran: see "
                                        "evidence.kernels.other"});
        c.conclude("stages timed after the output matched the reference; own = the stage's "
                   "kernel durations, critical = its share of the critical path (sums to the "
                   "busy time)");
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
