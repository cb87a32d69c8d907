// Probe capture-replay through an engine adapter (--engine; needs capture-safe-forward): the
// hazards of docs/bugs.md, bug 3 that are visible from outside an engine. moebench captures the
// adapter's forward on its own stream and replays it: a capture before the eager forward the
// ABI asks for is refused, nothing synchronises inside a capture (a failed capture is the
// adapter's FAIL), replays read new inputs, repeated replays and capture cycles stay right, and
// eager after a replay too. The scratch-growth refusal and the allocator's counters are the
// engine's own and stay with moebench's engine (capture_replay_probe.cpp).
#include <chrono>

#include "engine/external/external_engine.hpp"
#include "probes/evidence.hpp"
#include "probes/external_layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

constexpr int kLayers = 2;
constexpr int kRepeatedReplays = 20;
constexpr int kCaptureCycles = 3;

// Captures at the current M; any failure inside (a synchronising or allocating forward breaks
// the capture) is recorded as the adapter's and returns false.
bool capture_recorded(external::ExternalEngine& e, int& failures, std::string& first_failure) {
  try {
    e.capture();
    return true;
  } catch (const std::exception& err) {
    ++failures;
    if (first_failure.empty()) first_failure = err.what();
    e.drop_graphs();
    return false;
  }
}

}  // namespace

void run_capture_replay_through_adapter(ProbeState& state) {
  const auto& adapter = state.options().adapter;
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    auto seed = [&](int purpose) { return derive_seed(state.options().seed, 10 + purpose, m); };
    int capture_failures = 0;
    std::string first_failure;
    c.evidence["engine_adapter"] = {{"name", adapter->name()}, {"version", adapter->version()}};

    auto engine = std::make_unique<external::ExternalEngine>(
        adapter, engine_config(state, shape, format, 3, kLayers), m, state.allocator());
    external::ExternalEngine& e = *engine;

    // 1. Before the eager forward at this M a capture is refused, with the reason.
    e.set_input(m, seed(0));
    std::string refusal;
    try {
      e.capture();
    } catch (const Error& err) {
      refusal = err.what();
    }
    c.checks.push_back({"capture_refused_before_warmup", !refusal.empty() && !e.captured(),
                        refusal.empty() ? "capture was accepted before any eager forward" : "refused: " + refusal});
    e.forward();
    c.checks.push_back(check_external_layer(e, 0, seed(0)).as_check("eager_warmup_matches_reference"));

    // 2. Capture at M: nothing may synchronise or allocate inside.
    const auto captured_input_out = copy_outputs(e);
    const auto t0 = std::chrono::steady_clock::now();
    const bool captured = capture_recorded(e, capture_failures, first_failure);
    const double capture_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    auto no_sync = [&] {
      return report::Check{"no_sync_inside_capture", capture_failures == 0,
                           std::to_string(capture_failures) + " captures failed" +
                               (first_failure.empty() ? "" : "; first: " + first_failure)};
    };
    if (!captured) {
      c.checks.push_back(no_sync());
      e.set_input(m, seed(3));
      e.forward();
      c.checks.push_back(check_external_layer(e, 0, seed(3)).as_check("eager_after_failed_capture_matches_reference"));
      engine.reset();
      c.checks.push_back(device_usable(state, shape, format, m, "device_usable_after_teardown"));
      c.conclude("");
      state.add_case(std::move(c));
      continue;
    }

    // 3. Inputs changed between capture and replay: the replay reads the new ones, and equals an
    //    eager step of the same input bit for bit over every token of every layer.
    e.set_input(m, seed(2));
    e.replay();
    c.checks.push_back(check_external_layer(e, 0, seed(2)).as_check("replay_after_input_change_matches_reference"));
    const auto replayed = copy_outputs(e);
    const std::size_t changed = count_differences(e.output(0), captured_input_out[0], replayed[0].size());
    e.forward();
    const std::size_t differ = count_output_differences(e, replayed);
    c.checks.push_back({"replay_bit_exact_to_eager", differ == 0,
                        std::to_string(differ) + " outputs (every token, every layer) differ between the replay "
                                                 "and an eager step of the same input"});
    c.evidence["outputs_changed_by_new_input"] = changed;
    c.prove("replay_saw_changed_input", changed > 0,
            "the replay's output equals the one of the capture-time input: the new input was not shown to "
            "reach the graph");

    // 4. Repeated replays give the same bits.
    for (int i = 0; i < kRepeatedReplays; ++i) e.replay();
    const std::size_t drift = count_output_differences(e, replayed);
    c.checks.push_back({"repeated_replays_identical", drift == 0,
                        std::to_string(drift) + " outputs differ after " + std::to_string(kRepeatedReplays) +
                            " replays"});

    // 5. Consecutive capture cycles stay correct.
    int cycles_captured = 0;
    bool cycles_ok = true;
    std::string cycles;
    for (int cycle = 0; cycle < kCaptureCycles; ++cycle) {
      e.drop_graphs();
      if (!capture_recorded(e, capture_failures, first_failure)) {
        cycles_ok = false;
        cycles += "cycle " + std::to_string(cycle) + ": capture failed; ";
        continue;
      }
      ++cycles_captured;
      e.replay();
      const LayerCheck k = check_external_layer(e, 0, seed(2));
      cycles_ok = cycles_ok && k.passed;
      cycles += "cycle " + std::to_string(cycle) + ": " + (k.passed ? "ok" : k.detail) + "; ";
    }
    c.checks.push_back({"capture_cycles_correct", cycles_ok, cycles});
    c.prove("capture_cycles_ran", cycles_captured == kCaptureCycles,
            std::to_string(cycles_captured) + " of " + std::to_string(kCaptureCycles) + " capture cycles captured");
    c.checks.push_back(no_sync());

    // 6. Eager after replay is still correct.
    e.set_input(m, seed(3));
    e.forward();
    c.checks.push_back(check_external_layer(e, 0, seed(3)).as_check("eager_after_replay_matches_reference"));

    // Timing: eager against replay, same input.
    std::string flags;
    if (e.captured()) {
      report::Measurement eager = state.sampler().measure(
          e.stream(), "capture-replay/" + shape.name + "/eager", [&] { e.forward(); });
      report::Measurement replay = state.sampler().measure(
          e.stream(), "capture-replay/" + shape.name + "/replay", [&] { e.replay(); });
      c.metrics["capture_us"] = {capture_us, "us"};
      c.metrics["eager_gpu_us"] = {eager.gpu_time().median, "us"};
      c.metrics["replay_gpu_us"] = {replay.gpu_time().median, "us"};
      c.metrics["eager_host_us"] = {eager.host_time().median, "us"};
      c.metrics["replay_host_us"] = {replay.host_time().median, "us"};
      c.metrics["host_saving_pct"] = {100.0 * (1.0 - replay.host_time().median / eager.host_time().median), "%"};
      flags = sampling_flags(replay);
      c.measurements["eager"] = std::move(eager);
      c.measurements["main"] = std::move(replay);
      // 7. The engine destroyed right after a replay (the adapter must keep its buffers for it).
      e.replay();
    }
    engine.reset();
    c.checks.push_back(device_usable(state, shape, format, m, "device_usable_after_teardown"));
    c.evidence["not_checked_through_adapter"] =
        "scratch growth refused during capture and the allocator's counters: the adapter's memory is its own";
    c.conclude("the capture hazards visible from outside the engine checked: refusal before warm-up, no "
               "sync inside, replays after an input change, " + std::to_string(kRepeatedReplays) + " replays and " +
               std::to_string(kCaptureCycles) + " cycles, eager after replay, teardown" + flags);
    state.add_case(std::move(c));
  }
}

}  // namespace moe
