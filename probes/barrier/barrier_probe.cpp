// Probe `barrier` (bug 2 of docs/bugs.md, a "synchronize" that was a no-op): the same decode step
// timed by two loops. The historic loop used the engine's deferred synchronize as its barrier, so
// reps piled up in the launch queue until the launch itself blocked and host enqueue time converged
// on GPU time. moebench's own loop drains between samples, so host time stays far below GPU time.
// PASS: moebench's loop is clean and the historic loop shows the artifact.
#include <chrono>

#include "common/cuda_event.hpp"
#include "engine/engine.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"
#include "reports/statistics.hpp"

namespace moe {

namespace {
constexpr double kCleanRatio = 0.5;    // host/GPU below this: the barrier waited
constexpr double kArtifactRatio = 0.8; // host/GPU above this: the queue was saturated

double median_of_last_half(const std::vector<double>& v) {
  return report::summarize(std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end())).median;
}

// The historic benchmark loop: a no-op barrier between reps, event times read at the end.
report::Measurement historic_loop(Engine& e, std::size_t reps) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::unique_ptr<CudaEvent>> starts, stops;
  report::Measurement m;
  m.l2_mode = "hot";
  m.stop_reason = "fixed_reps";
  for (std::size_t r = 0; r < reps; ++r) {
    starts.push_back(std::make_unique<CudaEvent>());
    stops.push_back(std::make_unique<CudaEvent>());
    const auto t0 = Clock::now();
    starts.back()->record(e.stream().handle());
    e.forward();
    stops.back()->record(e.stream().handle());
    m.host_time_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    e.stream().synchronize();  // deferred: returns at once
  }
  e.stream().drain();
  for (std::size_t r = 0; r < reps; ++r) {
    m.gpu_time_us.push_back(stops[r]->elapsed_ms_since(*starts[r]) * 1e3);
    m.total_gpu_time_s += m.gpu_time_us.back() * 1e-6;
  }
  return m;
}
}  // namespace

void run_barrier_probe(ProbeState& state) {
  // Enough to fill the launch queue several times over (--barrier-reps, default 300).
  const auto reps = static_cast<std::size_t>(state.options().barrier_reps);
  for (const Shape& shape : shapes_or_default(state, {"deepseek-v2-lite"})) {
    for (kernels::WeightFormat format : formats_or_bf16(state)) {
      for (int m : ms_or_default(state, {16})) {
        report::CaseResult c = moe_case(state, "loops", shape, format, m, "eager");
        Engine e(engine_config(state, shape, format, 60), state.allocator(), state.device());
        const std::uint64_t input_seed = derive_seed(state.options().seed, 61, m);
        e.set_input(m, input_seed);
        e.forward();
        c.checks.push_back(check_layer_output(e.layer(0), e.output(0), m, input_seed, 4)
                               .as_check("output_matches_reference"));

        // moebench's own loop, fixed length, without the stream blocker (which would hide the
        // queue) so only the barrier differs between the two loops.
        measure::MeasureOverrides fixed;
        fixed.stopping = state.sampler().options().stopping;
        fixed.stopping->min_samples = fixed.stopping->max_samples = reps;
        fixed.stopping->min_time_s = 0;
        fixed.stopping->timeout_s = 600;
        fixed.block_during_enqueue = false;
        report::Measurement own =
            state.sampler().measure(e.stream(), "barrier/harness", [&] { e.forward(); }, fixed);
        report::Measurement historic = historic_loop(e, reps);

        // The host times of the GPU samples themselves (kernel timing on: CUPTI recording, as
        // it is for the historic loop too), so each ratio pairs one loop's samples.
        const std::vector<double>& own_host = own.main_loop_host_time_us();
        const double own_ratio = median_of_last_half(own_host) / median_of_last_half(own.gpu_time_us);
        const double old_ratio =
            median_of_last_half(historic.host_time_us) / median_of_last_half(historic.gpu_time_us);
        c.metrics["harness_host_us"] = {median_of_last_half(own_host), "us"};
        c.metrics["harness_gpu_us"] = {median_of_last_half(own.gpu_time_us), "us"};
        c.metrics["harness_host_over_gpu"] = {own_ratio, "ratio"};
        c.metrics["noop_barrier_host_us"] = {median_of_last_half(historic.host_time_us), "us"};
        c.metrics["noop_barrier_gpu_us"] = {median_of_last_half(historic.gpu_time_us), "us"};
        c.metrics["noop_barrier_host_over_gpu"] = {old_ratio, "ratio"};
        c.measurements["main"] = std::move(own);
        c.measurements["noop_barrier"] = std::move(historic);
        c.checks.push_back({"harness_barrier_waits", own_ratio < kCleanRatio,
                            "moebench's loop: host/GPU " + std::to_string(own_ratio) +
                                " over the last half of " + std::to_string(reps) +
                                " samples (must stay below " + std::to_string(kCleanRatio) + ")"});
        c.conclude_from_checks();
        const bool artifact = old_ratio > kArtifactRatio;
        c.evidence = {{"noop_barrier_artifact_visible", artifact},
                      {"reps", reps},
                      {"note", "ratios over the second half of each loop, once the launch "
                               "queue had time to fill"}};
        if (c.verdict == report::Verdict::pass && !artifact) {
          c.verdict = report::Verdict::inconclusive;
          c.reason = "the no-op-barrier loop did not saturate the queue (host/GPU " +
                     std::to_string(old_ratio) + "): the artifact could not be shown";
        } else if (c.reason.empty()) {
          c.reason = "no-op barrier: host/GPU " + std::to_string(old_ratio) +
                     "; real drain: " + std::to_string(own_ratio);
        }
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
