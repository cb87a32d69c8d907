// Probe `barrier` (docs/bugs.md, bug 2, a "synchronize" that was a no-op): the same decode step timed by
// two loops that differ in the barrier alone. Both are the product's sampler (L2 flush, CUPTI
// windows, clock reads, fixed sample count, no stream blocker); the historic one replaces its
// barrier between samples with the engine's deferred synchronize, as the historic benchmark
// did, so reps pile up in the launch queue until the launch itself blocks and host enqueue time
// converges on GPU time. moebench's own loop drains between samples, so host time stays far
// below GPU time. PASS: moebench's loop is clean and the historic loop shows the artifact
// (INCONCLUSIVE when it does not: the queue never filled).
#include "engine/engine.hpp"
#include "probes/evidence.hpp"
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
}  // namespace

extern const SweepDeclaration barrier_sweep;
const SweepDeclaration barrier_sweep{.cases = {"loops"},
                                     .shapes = {"deepseek-v2-lite"},
                                     .ms = {16},
                                     .formats = kBf16Only,
                                     .modes = ModeAxis::fixed,
                                     .fixed_mode = "eager"};

void run_barrier_probe(ProbeState& state) {
  // Enough to fill the launch queue several times over (--barrier-reps, default 300).
  const auto reps = static_cast<std::size_t>(state.options().barrier_reps);
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    Engine e(engine_config(state, shape, format, 60), state.allocator(), state.device());
    const std::uint64_t input_seed = derive_seed(state.options().seed, 61, m);
    e.set_input(m, input_seed);
    e.forward();
    c.checks.push_back(check_layer_output(e.layer(0), e.output(0), m, input_seed,
                                              affordable_tokens(e.layer(0).config().dims, m))
                           .as_check("output_matches_reference"));

    // Both loops fixed length, without the stream blocker (which would hide the queue), so
    // only the barrier differs between them.
    measure::MeasureOverrides fixed;
    fixed.stopping = state.sampler().options().stopping;
    fixed.stopping->min_samples = fixed.stopping->max_samples = reps;
    fixed.stopping->min_time_s = 0;
    fixed.stopping->timeout_s = 600;
    fixed.block_during_enqueue = false;
    report::Measurement own =
        state.sampler().measure(e.stream(), "barrier/harness", [&] { e.forward(); }, fixed);
    measure::MeasureOverrides historic_barrier = fixed;
    historic_barrier.noop_barrier = true;
    report::Measurement historic = state.sampler().measure(
        e.stream(), "barrier/noop-barrier", [&] { e.forward(); }, historic_barrier);

    // The host times of the GPU samples themselves (CUPTI recording in both loops when
    // kernel timing is on), so each ratio pairs one loop's samples.
    const std::vector<double>& own_host = own.main_loop_host_time_us();
    const std::vector<double>& old_host = historic.main_loop_host_time_us();
    const double own_ratio = median_of_last_half(own_host) / median_of_last_half(own.gpu_time_us);
    const double old_ratio = median_of_last_half(old_host) / median_of_last_half(historic.gpu_time_us);
    c.metrics["harness_host_us"] = {median_of_last_half(own_host), "us"};
    c.metrics["harness_gpu_us"] = {median_of_last_half(own.gpu_time_us), "us"};
    c.metrics["harness_host_over_gpu"] = {own_ratio, "ratio"};
    c.metrics["noop_barrier_host_us"] = {median_of_last_half(old_host), "us"};
    c.metrics["noop_barrier_gpu_us"] = {median_of_last_half(historic.gpu_time_us), "us"};
    c.metrics["noop_barrier_host_over_gpu"] = {old_ratio, "ratio"};
    c.checks.push_back({"harness_barrier_waits", own_ratio < kCleanRatio,
                        "moebench's loop: host/GPU " + std::to_string(own_ratio) +
                            " over the last half of " + std::to_string(reps) +
                            " samples (must stay below " + std::to_string(kCleanRatio) + ")"});
    const bool artifact = old_ratio > kArtifactRatio;
    // Same sampler, same sample count, same flush and kernel timing: only the barrier.
    const bool alike = own.samples() == historic.samples() && own.l2_mode == historic.l2_mode &&
                       own.kernel_timing == historic.kernel_timing &&
                       own.l2_flushes == historic.l2_flushes;
    c.evidence["reps"] = reps;
    c.evidence["noop_barrier_host_over_gpu"] = old_ratio;
    c.evidence["note"] = "ratios over the second half of each loop, once the launch queue "
                         "had time to fill";
    c.prove("noop_barrier_artifact_visible", artifact,
            "the no-op-barrier loop did not saturate the queue (host/GPU " +
                std::to_string(old_ratio) + ", needs above " + std::to_string(kArtifactRatio) +
                "): the artifact could not be shown");
    c.prove("loops_differ_only_in_barrier", alike,
            "the two loops differ in samples, L2 flushes or kernel timing as well");
    c.measurements["main"] = std::move(own);
    c.measurements["noop_barrier"] = std::move(historic);
    c.conclude("no-op barrier: host/GPU " + std::to_string(old_ratio) + "; real drain: " +
               std::to_string(own_ratio));
    state.add_case(std::move(c));
  }
}

}  // namespace moe
