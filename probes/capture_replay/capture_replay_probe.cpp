// Probe `capture-replay`: CUDA graph capture and replay of a decode step, with the hazards of
// docs/bugs.md, bug 3 checked by name, and the host time a replay saves over eager enqueueing. A drain
// inside a capture is the engine's fault, so it is a FAIL of no_sync_inside_capture (the
// stream refuses it with SyncInsideCaptureError), never an ERROR. Memory is judged by the
// allocator's own counters: the device-wide free memory moves with other processes.
#include <chrono>

#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

constexpr int kRepeatedReplays = 20;
constexpr int kCaptureCycles = 3;

// The allocator's counters that a replay or a capture cycle must leave as they were.
std::string memory_delta(const AllocatorStats& a, const AllocatorStats& b, bool& unchanged) {
  unchanged = a.bytes_in_use == b.bytes_in_use && a.bytes_reserved == b.bytes_reserved &&
              a.driver_allocations == b.driver_allocations;
  return "allocator bytes in use " + std::to_string(a.bytes_in_use) + " -> " +
         std::to_string(b.bytes_in_use) + ", reserved " + std::to_string(a.bytes_reserved) +
         " -> " + std::to_string(b.bytes_reserved) + ", cudaMalloc calls " +
         std::to_string(a.driver_allocations) + " -> " + std::to_string(b.driver_allocations);
}

// Layer 0 against the CPU reference: every token where that is affordable (the tiny shape),
// else a spread of tokens; the replay is also compared bit for bit over every token with an
// eager step (see replay_bit_exact_to_eager).
report::Check layer0(Engine& e, std::uint64_t seed, const std::string& name) {
  e.stream().drain();
  const int m = e.input_tokens();
  return check_layer_output(e.layer(0), e.output(0), m, seed,
                            affordable_tokens(e.layer(0).config().dims, m))
      .as_check(name);
}

// Captures at the current M; a drain inside the capture is refused by the stream and recorded
// (returns false). Every other failure propagates.
struct CaptureLog {
  int captures = 0;
  int refused_syncs = 0;
  std::size_t drains_inside = 0;
  std::string first_sync;
};
bool capture_watched(Engine& e, CaptureLog& log, bool check_first = true) {
  const std::size_t drains = e.stream().drains();
  ++log.captures;
  try {
    e.capture(check_first);
  } catch (const SyncInsideCaptureError& err) {
    ++log.refused_syncs;
    if (log.first_sync.empty()) log.first_sync = err.what();
    e.drop_graphs();
    return false;
  }
  log.drains_inside += e.stream().drains() - drains;
  return true;
}

report::Check no_sync_check(const CaptureLog& log) {
  return {"no_sync_inside_capture", log.refused_syncs == 0 && log.drains_inside == 0,
          std::to_string(log.captures) + " captures: " + std::to_string(log.refused_syncs) +
              " synchronised inside and were refused, " + std::to_string(log.drains_inside) +
              " drains counted inside" +
              (log.first_sync.empty() ? "" : "; first: " + log.first_sync)};
}

}  // namespace

extern const SweepDeclaration capture_replay_sweep;
const SweepDeclaration capture_replay_sweep{.cases = {"cycle"},
                                            .shapes = kDefaultMoeShapes,
                                            .ms = {1, 8, 64},
                                            .formats = kBothFormats,
                                            .modes = ModeAxis::fixed,
                                            .fixed_mode = "graph"};

// Through an engine adapter (--engine): capture_replay_through_adapter.cpp.
void run_capture_replay_through_adapter(ProbeState& state);

void run_capture_replay_probe(ProbeState& state) {
  if (state.options().adapter) return run_capture_replay_through_adapter(state);
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    auto seed = [&](int purpose) { return derive_seed(state.options().seed, 10 + purpose, m); };
    const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
    CaptureLog log;

    const EngineConfig config = engine_config(state, shape, format, 3);
    auto engine = std::make_unique<Engine>(config, state.allocator(), state.device());
    Engine& e = *engine;

    // 1. Before warm-up a capture is refused, with a reason, and the engine still works.
    e.set_input(m, seed(0));
    const auto reason = e.capture_blocker();
    std::string refusal;
    try {
      e.capture();
    } catch (const Error& err) {
      refusal = err.what();
    }
    c.checks.push_back({"capture_refused_before_warmup",
                        reason.has_value() && !refusal.empty() && !e.captured(),
                        refusal.empty() ? "capture was accepted before any eager forward"
                                        : "refused: " + refusal});
    e.forward();
    c.checks.push_back(layer0(e, seed(0), "eager_warmup_matches_reference"));

    // 2. A capture that would grow the scratch pool is refused by the pool itself (the
    //    engine's pre-check is skipped), and the layer still works at that M after.
    const int big = std::min(65536, 4 * m + 8);
    e.set_input(big, seed(1));
    const std::size_t capacity_before = e.layer(0).scratch().capacity();
    // Warmed up, so the layer's only reason to refuse a capture is a scratch that must grow.
    c.prove("growth_was_needed", e.layer(0).capture_blocker(big).has_value(),
            "M=" + std::to_string(big) + " fits the scratch already: the capture could not grow it");
    std::string growth;
    bool refused_by_pool = false;
    try {
      if (capture_watched(e, log, /*check_first=*/false))
        growth = "capture at M=" + std::to_string(big) + " was accepted: the pool grew";
      else
        growth = "capture at M=" + std::to_string(big) + " synchronised before any growth";
    } catch (const CaptureGrowthError& err) {
      refused_by_pool = true;
      growth = err.what();
    } catch (const std::exception& err) {
      growth = std::string("capture failed, but not by the pool's refusal: ") + err.what();
    }
    e.drop_graphs();
    const bool unchanged = e.layer(0).scratch().capacity() == capacity_before;
    c.checks.push_back({"capture_growth_refused", refused_by_pool && unchanged,
                        growth + (unchanged ? "" : "; the scratch capacity changed")});
    e.forward();
    c.checks.push_back(layer0(e, seed(1), "eager_after_refused_growth_matches_reference"));

    // 3. Capture at M: nothing synchronises inside (the stream refuses a drain there, and
    //    its drain count must not move).
    e.set_input(m, seed(0));
    e.forward();  // warm at this M again after the larger one
    e.stream().drain();
    const auto captured_input_out = copy_to_host(e.output(0), elements);
    const auto t0 = std::chrono::steady_clock::now();
    const bool captured = capture_watched(e, log);
    const double capture_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (!captured) {
      // Nothing to replay: the rest of the cycle cannot run. The engine must still be
      // usable eagerly and after teardown.
      c.checks.push_back(no_sync_check(log));
      e.set_input(m, seed(3));
      e.forward();
      c.checks.push_back(layer0(e, seed(3), "eager_after_failed_capture_matches_reference"));
      engine.reset();
      c.checks.push_back(device_usable(state, shape, format, m, "device_usable_after_teardown"));
      c.conclude("");
      state.add_case(std::move(c));
      continue;
    }

    // 4. Inputs changed between capture and replay: the replay reads the new ones.
    e.set_input(m, seed(2));
    e.replay();
    c.checks.push_back(layer0(e, seed(2), "replay_after_input_change_matches_reference"));
    const auto first = copy_to_host(e.output(0), elements);
    const std::size_t changed = count_differences(e.output(0), captured_input_out, elements);
    // Every token of every layer: the replay and an eager step of the same input agree bit
    // for bit (the combine is deterministic), so tokens the reference skipped are covered.
    {
      std::vector<std::vector<std::uint16_t>> replayed;
      for (int l = 0; l < e.layers(); ++l) replayed.push_back(copy_to_host(e.output(l), elements));
      e.forward();
      e.stream().drain();
      std::size_t differ = 0;
      for (int l = 0; l < e.layers(); ++l) differ += count_differences(e.output(l), replayed[static_cast<std::size_t>(l)], elements);
      c.checks.push_back({"replay_bit_exact_to_eager", differ == 0,
                          std::to_string(differ) + " of " +
                              std::to_string(elements * static_cast<std::size_t>(e.layers())) +
                              " outputs (every token, every layer) differ between the replay "
                              "and an eager step of the same input"});
    }
    c.evidence["outputs_changed_by_new_input"] = changed;
    c.prove("replay_saw_changed_input", changed > 0,
            "the replay's output equals the one of the capture-time input: the new input "
            "was not shown to reach the graph");

    // 5. Repeated replays give the same bits and leave memory use unchanged.
    const AllocatorStats before = state.allocator().stats();
    int replays = 0;
    for (int i = 0; i < kRepeatedReplays; ++i, ++replays) e.replay();
    e.stream().drain();
    const std::size_t diff = count_differences(e.output(0), first, elements);
    const AllocatorStats after = state.allocator().stats();
    c.checks.push_back({"repeated_replays_identical", diff == 0,
                        std::to_string(diff) + " outputs differ after " +
                            std::to_string(kRepeatedReplays) + " replays"});
    bool same = false;
    const std::string replay_memory = memory_delta(before, after, same);
    c.checks.push_back({"repeated_replays_memory_unchanged", same, replay_memory});
    c.prove("replays_ran", replays == kRepeatedReplays, "fewer replays than planned");

    // 6. Consecutive capture cycles stay correct and do not grow memory.
    bool cycles_ok = true;
    int cycles_captured = 0;
    std::string cycles;
    AllocatorStats cycle_start{};
    for (int cycle = 0; cycle < kCaptureCycles; ++cycle) {
      e.drop_graphs();
      e.stream().drain();
      if (cycle == 1) cycle_start = state.allocator().stats();
      if (!capture_watched(e, log)) {
        cycles_ok = false;
        cycles += "cycle " + std::to_string(cycle) + ": capture synchronised; ";
        continue;
      }
      ++cycles_captured;
      e.replay();
      const report::Check k = layer0(e, seed(2), "cycle");
      cycles_ok = cycles_ok && k.passed;
      cycles += "cycle " + std::to_string(cycle) + ": " + (k.passed ? "ok" : k.detail) + "; ";
    }
    const AllocatorStats cycle_end = state.allocator().stats();
    c.checks.push_back({"capture_cycles_correct", cycles_ok, cycles});
    bool cycles_same = false;
    const std::string cycle_memory = memory_delta(cycle_start, cycle_end, cycles_same);
    c.checks.push_back({"capture_cycles_memory_unchanged", cycles_same,
                        cycle_memory + " from cycle 2 to cycle " + std::to_string(kCaptureCycles)});
    c.prove("capture_cycles_ran", cycles_captured == kCaptureCycles,
            std::to_string(cycles_captured) + " of " + std::to_string(kCaptureCycles) +
                " capture cycles captured");
    c.checks.push_back(no_sync_check(log));

    // 7. Eager after replay is still correct.
    e.set_input(m, seed(3));
    e.forward();
    c.checks.push_back(layer0(e, seed(3), "eager_after_replay_matches_reference"));

    // Timing: eager against replay, same input. Only with a graph (the cycles may not
    // have left one).
    std::string flags;
    if (e.captured()) {
      report::Measurement eager = state.sampler().measure(
          e.stream(), "capture-replay/" + shape.name + "/eager", [&] { e.forward(); });
      report::Measurement replay = state.sampler().measure(
          e.stream(), "capture-replay/" + shape.name + "/replay", [&] { e.replay(); });
      const double eager_host = eager.host_time().median;
      const double replay_host = replay.host_time().median;
      c.metrics["capture_us"] = {capture_us, "us"};
      c.metrics["eager_gpu_us"] = {eager.gpu_time().median, "us"};
      c.metrics["replay_gpu_us"] = {replay.gpu_time().median, "us"};
      c.metrics["eager_host_us"] = {eager_host, "us"};
      c.metrics["replay_host_us"] = {replay_host, "us"};
      c.metrics["host_saving_pct"] = {100.0 * (1.0 - replay_host / eager_host), "%"};
      flags = sampling_flags(replay);
      c.measurements["eager"] = std::move(eager);
      c.measurements["main"] = std::move(replay);

      // 8. Destroying the engine right after a replay (its destructor drains) leaves the
      //    device usable: a round trip, and a fresh engine that matches the reference.
      e.replay();
    }
    engine.reset();
    c.checks.push_back(device_usable(state, shape, format, m, "device_usable_after_teardown"));
    c.conclude("every capture hazard checked: refusals, no sync inside, replays after an "
               "input change, " + std::to_string(kRepeatedReplays) + " replays and " +
               std::to_string(kCaptureCycles) + " cycles with the allocator's counters "
               "unchanged, eager after replay, teardown" + flags);
    state.add_case(std::move(c));
  }
}

}  // namespace moe
