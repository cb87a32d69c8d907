// Probe `stages` end to end on the GPU: every kernel of a forward lands in a stage, the stage
// figures are consistent with the layer's GPU time, and both the decode and the tensor-core
// paths are covered, with programmatic launch on and off.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/device_allocator.hpp"
#include "kernels/moe/route_grouping_map.hpp"
#include "probes/probe.hpp"
#include "support/gpu_test.hpp"
#include "support/test_env.hpp"

using namespace moe;

namespace {

// MOE_TEST_SHAPES, MOE_TEST_M and MOE_TEST_FORMATS narrow them (racecheck: a case at one shape
// takes over 9 minutes).
const std::vector<std::string> kShapes = {"deepseek-v2-lite", "qwen3-30b-a3b"};
const std::vector<int>& stage_ms() {
  static const std::vector<int> ms = test::ms_from_env("MOE_TEST_M", {1, 8, 64});  // decode kernels, then the mma family or tiles
  return ms;
}

std::vector<report::CaseResult> run_stages(const EngineOptions& engine) {
  const Device& dev = test::test_device();
  RunOptions options;
  const auto library = load_shape_library(std::filesystem::path(test::fixtures_dir()) / "shapes");
  for (std::size_t i : test::shape_indices_from_env(kShapes)) options.shapes.push_back(resolve_shape(kShapes[i], library));
  options.user_set_shapes = true;
  options.ms = stage_ms();
  options.user_set_ms = true;
  options.formats = test::formats_from_env();
  options.modes = {"eager", "graph"};
  options.max_layers = 4;
  options.engine = engine;
  options.measure.stopping.min_samples = 5;
  options.measure.stopping.min_time_s = 0.02;
  options.copy_bytes = 8 * dev.l2_bytes;
  DeviceAllocator alloc;
  measure::Sampler sampler(dev, alloc, options.measure);
  std::vector<report::CaseResult> cases;
  ProbeState state("stages", options, dev, alloc, sampler,
                   [&](report::CaseResult c) { cases.push_back(std::move(c)); });
  probe_by_name("stages").run(state);
  return cases;
}

void check_cases(const std::vector<report::CaseResult>& cases) {
  // shapes x formats x M x modes
  REQUIRE(cases.size() == test::shape_indices_from_env(kShapes).size() * test::formats_from_env().size() *
                              stage_ms().size() * 2);
  for (const report::CaseResult& c : cases) {
    CAPTURE(c.key());
    const auto& meas = c.measurements.at("main");
    if (!meas.kernel_timing) {
      // CUPTI taken (compute-sanitizer, another profiler): no stage can be timed, and the case
      // says so rather than passing on no records.
      CHECK(c.verdict == report::Verdict::inconclusive);
      CHECK(c.evidence.at("kernel_records") == false);
      continue;
    }
    CHECK(c.verdict == report::Verdict::pass);
    // Measured, not assumed: every sample flushed, every stage ran a kernel in every sample.
    CHECK(c.evidence.at("l2_cold") == true);
    CHECK(c.evidence.at("every_stage_has_kernels") == true);
    CHECK(c.evidence.at("stages_without_kernels").empty());
    for (const char* stage : {"route", "gate_up", "down", "combine"}) {
      CAPTURE(stage);
      const std::string s = stage;
      REQUIRE(c.metrics.contains(s + "_us"));
      CHECK(c.metrics.at(s + "_us").value > 0);
      CHECK(c.metrics.at(s + "_floor_us").value > 0);
      // A stage adds to the critical path at most its own duration (medians of per-sample
      // values, so allow for the median of a difference).
      CHECK(c.metrics.at(s + "_critical_us").value <= c.metrics.at(s + "_us").value * 1.02 + 0.05);
      // Each layer runs each stage's kernels once a sample: one kernel a stage, but the route
      // from 65 tokens (route_groups_in_grid: the route kernel and its two grouping kernels).
      const int layers = c.evidence.at("layers").get<int>();
      const int per_layer = s == "route" && kernels::route::route_groups_in_grid(c.m.value_or(1)) ? 3 : 1;
      CHECK(c.evidence.at("stage_samples").at(s).at("kernels_per_sample").get<int>() == layers * per_layer);
    }
    CHECK_FALSE(c.metrics.contains("other_us"));
    // The critical path is the busy time: within the layer's GPU-event time (which adds the
    // launch gaps), and at least the floor is not a bound on it (a floor below the time).
    const double critical = c.metrics.at("critical_path_us").value;
    const double gpu = c.metrics.at("gpu_us_per_layer").value;
    CHECK(critical <= gpu * 1.05);
    CHECK(critical > 0.3 * gpu);
    CHECK(c.metrics.at("floor_us").value < gpu);
  }
}

}  // namespace

TEST_CASE("stages: every kernel in a stage, criticals within the layer's time (defaults)") {
  check_cases(run_stages(EngineOptions{}));
}

TEST_CASE("stages: without programmatic launch, criticals equal owns (nothing overlaps)") {
  EngineOptions no_pdl;
  no_pdl.assign("pdl=off", "--switch");
  const auto cases = run_stages(no_pdl);
  check_cases(cases);
  for (const report::CaseResult& c : cases) {
    if (!c.measurements.at("main").kernel_timing) continue;
    CAPTURE(c.key());
    for (const char* stage : {"route", "gate_up", "down", "combine"}) {
      const std::string s = stage;
      CHECK(c.metrics.at(s + "_critical_us").value ==
            doctest::Approx(c.metrics.at(s + "_us").value).epsilon(0.02));
    }
  }
}
