// Probe `host-nonblocking`: forward must only enqueue. On a decode step whose GPU time is over
// 500 us, the host must get control back in well under that: the ratio of host enqueue time to
// GPU time must stay below 0.5. A forward that waits for the GPU (the blocking-forward
// mutation) brings the ratio to about 1.
#include "engine/engine.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
constexpr double kMinGpuUs = 500;
constexpr double kMaxRatio = 0.5;
}  // namespace

void run_host_nonblocking_probe(ProbeState& state) {
  for (const Shape& shape : shapes_or_default(state, {"deepseek-v2-lite"})) {
    for (kernels::WeightFormat format : formats_or_bf16(state)) {
      for (int m : ms_or_default(state, {64})) {
        report::CaseResult c = moe_case(state, "forward", shape, format, m, "eager");
        Engine e(engine_config(state, shape, format, 30), state.allocator(), state.device());
        const std::uint64_t input_seed = derive_seed(state.options().seed, 31, m);
        e.set_input(m, input_seed);
        e.forward();
        c.checks.push_back(check_layer_output(e.layer(0), e.output(0), m, input_seed, 4)
                               .as_check("output_matches_reference"));
        // No stream blocker: a forward that blocks the host would wait on it forever.
        measure::MeasureOverrides unblocked;
        unblocked.block_during_enqueue = false;
        report::Measurement meas = state.sampler().measure(
            e.stream(), "host-nonblocking/" + shape.name, [&] { e.forward(); }, unblocked);
        const double gpu = meas.gpu_time().median, host = meas.host_time().median;
        const double ratio = host / gpu;
        c.metrics["gpu_us"] = {gpu, "us"};
        c.metrics["host_us"] = {host, "us"};
        c.metrics["host_over_gpu"] = {ratio, "ratio"};
        c.measurements["main"] = std::move(meas);
        c.checks.push_back({"forward_returns_before_gpu_finishes", ratio < kMaxRatio,
                            "host enqueue " + std::to_string(host) + " us over GPU " +
                                std::to_string(gpu) + " us = " + std::to_string(ratio) +
                                " (must be below " + std::to_string(kMaxRatio) + ")"});
        c.conclude_from_checks();
        if (c.verdict == report::Verdict::pass && gpu < kMinGpuUs) {
          c.verdict = report::Verdict::inconclusive;
          c.reason = "GPU time " + std::to_string(gpu) + " us is under " +
                     std::to_string(kMinGpuUs) + " us: too short to tell; use a larger --m";
        } else if (c.reason.empty()) {
          c.reason = "forward returned after " + std::to_string(ratio) + " of the GPU time";
        }
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
