#include "probes/bandwidth/step_timing.hpp"

#include <algorithm>

#include "probes/bandwidth/step_flops.hpp"
#include "probes/evidence.hpp"
#include "probes/evidence_rules.hpp"

namespace moe {

StepCeilings measure_step_ceilings(ProbeState& state) {
  StepCeilings c{checked_read_ceiling(state), std::nullopt, ""};
  try {
    c.compute = measure_compute_ceiling(state, c.compute_why);
  } catch (const Error& e) {
    c.compute_why = e.what();
  }
  if (c.compute && !c.compute->check.passed) {
    c.compute_why = "its GEMM failed its check: " + c.compute->check.detail;
    c.compute.reset();
  }
  return c;
}

void time_step(ProbeState& state, report::CaseResult& c, const TimedStep& step) {
  const bool asked_cold = state.sampler().options().l2 == measure::L2Mode::cold;
  const double over_l2 =
      step.bytes.dedup / static_cast<double>(std::max<std::size_t>(state.device().l2_bytes, 1));
  report::Measurement meas = state.sampler().measure(step.stream, step.label, step.enqueue);
  const double median_s = meas.gpu_time().median * 1e-6;
  const double gbps = step.bytes.dedup / median_s * 1e-9;
  const ReadCeiling& ceiling = step.ceilings.read;
  const double pct = 100.0 * gbps / ceiling.gbps;
  c.metrics["gpu_us_per_layer"] = {meas.gpu_time().median / step.layers, "us"};
  c.metrics["bytes_dedup"] = {step.bytes.dedup, "B"};
  c.metrics["bytes_no_dedup"] = {step.bytes.no_dedup, "B"};
  c.metrics["gbps"] = {gbps, "GB/s"};
  c.metrics["gbps_no_dedup"] = {step.bytes.no_dedup / median_s * 1e-9, "GB/s"};
  c.metrics["read_ceiling_gbps"] = {ceiling.gbps, "GB/s"};
  c.metrics["pct_of_read_ceiling"] = {pct, "%"};
  c.metrics["host_us"] = {meas.host_time().median, "us"};
  c.metrics["flops"] = {step.flops, "FLOP"};
  c.metrics["tflops"] = {step.flops / median_s * 1e-12, "TFLOP/s"};
  if (const auto& compute = step.ceilings.compute) {
    const double bound_s = roofline_seconds(step.bytes.dedup, ceiling.gbps, step.flops, compute->tflops);
    c.metrics["compute_ceiling_tflops"] = {compute->tflops, "TFLOP/s"};
    c.metrics["pct_of_compute_ceiling"] = {100.0 * step.flops / median_s * 1e-12 / compute->tflops, "%"};
    c.metrics["roofline_us_per_layer"] = {bound_s * 1e6 / step.layers, "us"};
    c.metrics["pct_of_roofline"] = {100.0 * bound_s / median_s, "%"};
    c.evidence["compute_ceiling"] = compute->library + ", bf16 GEMM " + std::to_string(compute->n) + "^3";
  } else {
    c.evidence["compute_ceiling"] = "not measured: " + step.ceilings.compute_why;
  }
  if (step.beside) step.beside(c, meas.gpu_time().median);
  c.checks.push_back({"bytes_within_read_ceiling", pct <= 100.0,
                      "dedup bytes over median GPU time is " + std::to_string(pct) +
                          "% of the read ceiling (above 100% means the byte count is "
                          "wrong, not a record)"});
  // The L2 was defeated only if every sample was flushed, or the step's distinct weights alone
  // are 4x the L2 (counted from the flushes the sampler did, not the option asked for).
  const std::size_t flushed = meas.l2_flushes.value_or(0);
  const L2Defeat l2 = l2_defeat(flushed, meas.samples(), over_l2, meas.l2_observed);
  const std::string l2_detail = l2.detail + "; " + std::to_string(step.layers) + " layers" +
                                (step.layers_reduced ? ", reduced for memory" : "");
  c.evidence["l2_flushes"] = flushed;
  c.evidence["samples"] = meas.samples();
  // The sampler's flush as measured after it, not as asked for (measure/l2_observation.hpp).
  if (meas.l2_observed) {
    const report::L2Observed& o = *meas.l2_observed;
    c.evidence["l2_observed"] = {{"samples_observed", o.samples_observed},
                                 {"observed", "the first sample, then every " + std::to_string(o.observe_every)},
                                 {"canary_lines", o.lines},
                                 {"evicted_fraction_median", o.evicted_fraction_median},
                                 {"evicted_fraction_min", o.evicted_fraction_min},
                                 {"cold_load_cycles_median", o.cold_load_cycles_median},
                                 {"hot_load_cycles_median", o.hot_load_cycles_median},
                                 {"flushes_unfinished", o.flushes_unfinished},
                                 {"cold", l2.flush_observed_cold}};
  }
  if (asked_cold) c.checks.push_back({"cold_figure_defeats_l2", l2.defeated, "asked for a cold figure: " + l2_detail});
  c.prove("l2_defeated", l2.defeated,
          "L2 not defeated, so the figure may be the cache's: " + l2_detail +
              (asked_cold ? "" : "; --l2 hot keeps the flush off"));
  const std::string flags = sampling_flags(meas);
  c.measurements["main"] = std::move(meas);
  c.conclude("decode step measured after its output matched the reference, " +
             std::string(l2.every_sample_flushed && l2.flush_observed_cold ? "L2 flushed before every sample and observed cold after it" : "working set over 4x the L2") +
             (asked_cold ? "" : " (L2 hot)") + flags);
  if (c.verdict != report::Verdict::pass) c.reason += flags;
}

}  // namespace moe
