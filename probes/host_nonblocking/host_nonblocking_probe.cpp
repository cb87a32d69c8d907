// Probe `host-nonblocking`: forward must only enqueue. On a two-layer decode step whose GPU
// time is over 500 us, the host must get control back in well under that: host enqueue time
// over GPU time must stay below 0.3. The threshold comes from measurement: clean, a step of
// 2-4 layers enqueues in 47-111 us (docs/gpu-runs.md, CUPTI off) against about 1180 us of GPU
// time here, 0.04 to 0.1; a forward that blocks on one of its two layers (mutation
// blocking-one-layer) waits for half the GPU time, so it reads at least 0.5, and a forward
// that blocks on both (blocking-forward) about 1. 0.3 sits between with room on either side.
// A ratio cannot see a wait on little GPU work: one readback before layer 0's kernels waits
// only for what is queued ahead, nothing in a timing loop that drains first (mutation
// one-readback-in-forward). So the forward also runs once behind a hold, a GPU sleep of 100 ms
// queued on its stream: a forward that only enqueues returns with the hold still pending
// (queried with cudaEventQuery), one that waits for its stream anywhere, for a readback, a
// sync or a drain, returns only after the hold (bounded: the hold ends on its own).
#include <chrono>

#include "common/cuda_event.hpp"
#include "engine/engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "probes/evidence.hpp"
#include "probes/evidence_rules.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
constexpr double kMinGpuUs = 500;
constexpr double kMaxRatio = kHostOverGpuLimit;  // 0.3, probes/evidence_rules.hpp
constexpr int kLayers = 2;  // "one of two layers" is what the threshold must catch
constexpr std::uint64_t kHoldNs = 100'000'000;  // the hold: 100 ms of GPU sleep ahead

// One forward behind a hold on its stream: whether the hold was pending when the forward
// began (the evidence that a wait would have had something to wait for) and when it returned.
struct HeldForward {
  bool held_when_forward_began = false;
  bool held_when_forward_returned = false;
  double forward_host_us = 0;
};

HeldForward forward_behind_hold(Engine& e) {
  kernels::preload_interference_kernels();  // its lazy load must not wait for anything
  e.stream().drain();
  CudaEvent hold_done;
  kernels::gpu_sleep(kHoldNs, e.stream().handle());
  hold_done.record(e.stream().handle());
  HeldForward h;
  h.held_when_forward_began = still_pending(hold_done);
  const auto start = std::chrono::steady_clock::now();
  e.forward();
  h.forward_host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  h.held_when_forward_returned = still_pending(hold_done);
  e.stream().drain();
  return h;
}
}  // namespace

extern const SweepDeclaration host_nonblocking_sweep;
const SweepDeclaration host_nonblocking_sweep{.cases = {"forward"},
                                              .shapes = {"deepseek-v2-lite"},
                                              .ms = {64},
                                              .formats = kBf16Only,
                                              .modes = ModeAxis::fixed,
                                              .fixed_mode = "eager"};

void run_host_nonblocking_probe(ProbeState& state) {
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    Engine e(engine_config(state, shape, format, 30, kLayers), state.allocator(), state.device());
    const std::uint64_t input_seed = derive_seed(state.options().seed, 31, m);
    e.set_input(m, input_seed);
    e.forward();
    c.checks.push_back(check_layer_output(e.layer(0), e.output(0), m, input_seed,
                                              affordable_tokens(e.layer(0).config().dims, m))
                           .as_check("output_matches_reference"));
    // Behind the hold, after the forward above built what a first forward builds (its
    // resident tables, its scratch): any wait left is the forward's own.
    const HeldForward held = forward_behind_hold(e);
    c.checks.push_back(
        {"forward_never_waits_for_its_stream", !held.held_when_forward_began || held.held_when_forward_returned,
         held.held_when_forward_returned
             ? "forward returned in " + std::to_string(held.forward_host_us) +
                   " us with the 100 ms hold queued ahead of it still pending"
             : "forward returned after " + std::to_string(held.forward_host_us) +
                   " us, the 100 ms hold queued ahead of it finished: it waited for its stream "
                   "(a readback, a sync or a drain)"});
    c.evidence["forward_behind_hold_host_us"] = held.forward_host_us;
    c.prove("stream_held_when_forward_began", held.held_when_forward_began,
            "the hold on the stream had finished before the forward began: nothing to wait for");
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
    const std::string flags = sampling_flags(meas);
    c.measurements["main"] = std::move(meas);
    c.checks.push_back({"forward_returns_before_gpu_finishes", ratio < kMaxRatio,
                        "host enqueue " + std::to_string(host) + " us over GPU " +
                            std::to_string(gpu) + " us = " + std::to_string(ratio) +
                            " (must be below " + std::to_string(kMaxRatio) + ")"});
    c.evidence["layers"] = e.layers();
    c.prove("two_layers", e.layers() == kLayers,
            "the engine has " + std::to_string(e.layers()) + " layers (memory), not 2");
    c.prove("gpu_time_long_enough", gpu >= kMinGpuUs,
            "GPU time " + std::to_string(gpu) + " us is under " + std::to_string(kMinGpuUs) +
                " us: too short to tell; use a larger --m");
    c.conclude("forward returned after " + std::to_string(ratio) + " of the GPU time" + flags);
    state.add_case(std::move(c));
  }
}

}  // namespace moe
