// Probe `capture-replay`: CUDA graph capture and replay of a decode step, with the hazards of
// bug 3 of docs/bugs.md checked by name, and the host time a replay saves over eager enqueueing.
#include <chrono>

#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

const std::vector<int> kDefaultMs{1, 8, 64};
constexpr int kRepeatedReplays = 20;
constexpr int kCaptureCycles = 3;
constexpr int kCheckTokens = 4;

// Device memory in use, as the driver and the engine's allocator see it.
struct MemoryUse {
  std::size_t driver_used = 0;
  std::size_t allocator_in_use = 0;
  static MemoryUse now(const DeviceAllocator& a) {
    std::size_t free = 0, total = 0;
    MOE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {total - free, a.stats().bytes_in_use};
  }
};

report::Check layer0(Engine& e, std::uint64_t seed, const std::string& name) {
  e.stream().drain();
  return check_layer_output(e.layer(0), e.output(0), e.input_tokens(), seed, kCheckTokens)
      .as_check(name);
}

}  // namespace

void run_capture_replay_probe(ProbeState& state) {
  for (const Shape& shape : shapes_or_default(state, kDefaultMoeShapes)) {
    for (kernels::WeightFormat format : formats_or_default(state)) {
      for (int m : ms_or_default(state, kDefaultMs)) {
        report::CaseResult c = moe_case(state, "cycle", shape, format, m, "graph");
        auto seed = [&](int purpose) { return derive_seed(state.options().seed, 10 + purpose, m); };

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
        std::string growth;
        bool refused_by_pool = false;
        try {
          e.capture(/*check_first=*/false);
          growth = "capture at M=" + std::to_string(big) + " was accepted: the pool grew";
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

        // 3. Capture at M: nothing synchronises inside (global capture mode would fail it, and
        //    the stream's drain count must not move).
        e.set_input(m, seed(0));
        e.forward();  // warm at this M again after the larger one
        e.stream().drain();
        const std::size_t drains = e.stream().drains();
        const auto t0 = std::chrono::steady_clock::now();
        e.capture();
        const double capture_us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        c.checks.push_back({"no_sync_inside_capture", e.stream().drains() == drains,
                            std::to_string(e.stream().drains() - drains) +
                                " drains during capture"});

        // 4. Inputs changed between capture and replay: the replay reads the new ones.
        e.set_input(m, seed(2));
        e.replay();
        c.checks.push_back(layer0(e, seed(2), "replay_after_input_change_matches_reference"));
        const auto first = copy_to_host(e.output(0), static_cast<std::size_t>(m) * shape.hidden);

        // 5. Repeated replays give the same bits and leave memory use unchanged.
        const MemoryUse before = MemoryUse::now(state.allocator());
        for (int i = 0; i < kRepeatedReplays; ++i) e.replay();
        e.stream().drain();
        const std::size_t diff =
            count_differences(e.output(0), first, static_cast<std::size_t>(m) * shape.hidden);
        const MemoryUse after = MemoryUse::now(state.allocator());
        c.checks.push_back({"repeated_replays_identical", diff == 0,
                            std::to_string(diff) + " outputs differ after " +
                                std::to_string(kRepeatedReplays) + " replays"});
        c.checks.push_back(
            {"repeated_replays_memory_unchanged",
             after.driver_used == before.driver_used &&
                 after.allocator_in_use == before.allocator_in_use,
             "device memory used " + std::to_string(before.driver_used) + " -> " +
                 std::to_string(after.driver_used) + " bytes; allocator " +
                 std::to_string(before.allocator_in_use) + " -> " +
                 std::to_string(after.allocator_in_use)});

        // 6. Consecutive capture cycles stay correct and do not grow memory.
        bool cycles_ok = true;
        std::string cycles = "";
        MemoryUse cycle_start{};
        for (int cycle = 0; cycle < kCaptureCycles; ++cycle) {
          e.drop_graphs();
          e.stream().drain();
          if (cycle == 1) cycle_start = MemoryUse::now(state.allocator());
          e.capture();
          e.replay();
          const report::Check k = layer0(e, seed(2), "cycle");
          cycles_ok = cycles_ok && k.passed;
          cycles += "cycle " + std::to_string(cycle) + ": " + (k.passed ? "ok" : k.detail) + "; ";
        }
        const MemoryUse cycle_end = MemoryUse::now(state.allocator());
        c.checks.push_back({"capture_cycles_correct", cycles_ok, cycles});
        c.checks.push_back({"capture_cycles_memory_unchanged",
                            cycle_end.driver_used == cycle_start.driver_used,
                            "device memory used " + std::to_string(cycle_start.driver_used) +
                                " -> " + std::to_string(cycle_end.driver_used) +
                                " bytes from cycle 2 to cycle " + std::to_string(kCaptureCycles)});

        // 7. Eager after replay is still correct.
        e.set_input(m, seed(3));
        e.forward();
        c.checks.push_back(layer0(e, seed(3), "eager_after_replay_matches_reference"));

        // Timing: eager against replay, same input.
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
        c.measurements["eager"] = std::move(eager);
        c.measurements["main"] = std::move(replay);

        // 8. Destroying the engine right after a replay (its destructor drains) leaves the
        //    device usable: a round trip, and a fresh engine that matches the reference.
        e.replay();
        engine.reset();
        c.checks.push_back(device_usable(state, shape, format, m, "device_usable_after_teardown"));
        c.reason = "every capture hazard checked";
        c.conclude_from_checks();
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
