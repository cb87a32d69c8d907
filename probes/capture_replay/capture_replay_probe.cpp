// Probe `capture-replay`: CUDA graph capture and replay of a decode step, with the hazards of
// docs/bugs.md, bug 3 checked by name, and the host time a replay saves over eager enqueueing. A
// sync inside a capture is the engine's fault, so it is a FAIL of no_sync_inside_capture, never
// an ERROR: whether the stream refuses its own drain (SyncInsideCaptureError) or a raw CUDA
// call invalidates the capture (capture_invalidation.hpp). Every replay after the first runs on
// new tokens written into the graph's input buffer, with every output poisoned before it, so a
// replay that does nothing or replays a stale input cannot pass. Memory is judged by the
// allocator's own counters: the device-wide free memory moves with other processes.
#include <algorithm>
#include <chrono>
#include <functional>

#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "kernels/moe/forward.hpp"
#include "probes/capture_replay/capture_invalidation.hpp"
#include "probes/capture_replay/capture_replay_plan.hpp"
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

// Captures at the current M; a drain inside the capture is refused by the stream, and a raw
// synchronising call invalidates the capture: either is recorded (returns false). Every other
// failure propagates.
struct CaptureLog {
  int captures = 0;
  int refused_syncs = 0;
  std::size_t drains_inside = 0;
  std::string first_sync;
};
// `invalidation_is_sync`: whether a capture invalidated by an illegal CUDA call counts as a
// sync inside it; not in the growth step, where the call would be the growth's cudaMalloc.
bool capture_watched(Engine& e, CaptureLog& log, bool check_first = true, bool invalidation_is_sync = true) {
  const std::size_t drains = e.stream().drains();
  ++log.captures;
  try {
    e.capture(check_first);
  } catch (const SyncInsideCaptureError& err) {
    ++log.refused_syncs;
    if (log.first_sync.empty()) log.first_sync = err.what();
    e.drop_graphs();
    return false;
  } catch (const CudaError& err) {
    // A raw synchronising call invalidated the capture: the engine's fault, and not a sticky
    // error (CapturedGraph ended the capture), so the engine is checked eagerly after.
    if (!invalidation_is_sync || !is_capture_invalidation(err.status())) throw;
    (void)cudaGetLastError();
    ++log.refused_syncs;
    if (log.first_sync.empty()) log.first_sync = std::string("capture invalidated: ") + err.what();
    e.drop_graphs();
    return false;
  }
  log.drains_inside += e.stream().drains() - drains;
  return true;
}

// Fills every layer's output rows of the current M with poison (bf16 NaN), on the engine's
// stream: a replay that writes nothing leaves it there. The outputs are the engine's buffers,
// handed out read-only; the probe writes them only here, between steps.
void poison_outputs(Engine& e) {
  const std::size_t bytes = static_cast<std::size_t>(e.input_tokens()) *
                            static_cast<std::size_t>(e.config().shape.hidden) * sizeof(__nv_bfloat16);
  for (int l = 0; l < e.layers(); ++l)
    MOE_CUDA_CHECK(cudaMemsetAsync(const_cast<__nv_bfloat16*>(e.output(l)),
                                   DeviceAllocator::kPoisonByte, bytes, e.stream().handle()));
}

std::size_t poison_left(Engine& e, std::size_t elements) {
  std::size_t left = 0;
  for (int l = 0; l < e.layers(); ++l) left += count_poison(copy_to_host(e.output(l), elements));
  return left;
}

// Replays on new tokens, each checked on its own: what they did and what they got.
struct ReplayRounds {
  int rounds = 0;
  int wrong = 0;
  int inputs_changed = 0;   // the graph's input buffer, read back, held other tokens than before
  int poisoned_before = 0;  // layer 0's output, read back, was all poison before the replay
  std::size_t poison_left = 0;
  std::string first_wrong;
};

// One replay on new tokens written into the graph's input buffer (same address, same M), every
// output poisoned first; layer 0 checked against the reference of the new input on `tokens`
// tokens, every output of every layer for poison left.
void replay_on_new_input(Engine& e, std::uint64_t seed, int tokens, ReplayRounds& r,
                         const std::string& label) {
  const int m = e.input_tokens();
  const std::size_t elements = static_cast<std::size_t>(m) * static_cast<std::size_t>(e.config().shape.hidden);
  e.stream().drain();
  const __nv_bfloat16* buffer = e.input();
  const auto previous = copy_to_host(buffer, elements);
  e.set_input(m, seed);
  poison_outputs(e);
  e.stream().drain();
  r.inputs_changed += e.input() == buffer && count_differences(e.input(), previous, elements) > 0;
  r.poisoned_before += count_poison(copy_to_host(e.output(0), elements)) == elements;
  e.replay();
  e.stream().drain();
  const std::size_t left = poison_left(e, elements);
  r.poison_left += left;
  const LayerCheck k = check_layer_output(e.layer(0), e.output(0), m, seed, tokens);
  ++r.rounds;
  if (k.passed && left == 0) return;
  ++r.wrong;
  if (r.first_wrong.empty())
    r.first_wrong = label + ": " + (left ? std::to_string(left) + " outputs still poison; " : "") + k.detail;
}

report::Check no_sync_check(const CaptureLog& log) {
  return {"no_sync_inside_capture", log.refused_syncs == 0 && log.drains_inside == 0,
          std::to_string(log.captures) + " captures: " + std::to_string(log.refused_syncs) +
              " synchronised inside and were refused, " + std::to_string(log.drains_inside) +
              " drains counted inside" +
              (log.first_sync.empty() ? "" : "; first: " + log.first_sync)};
}

// A graph captured at M, then an eager step at a larger M that regrows every layer's scratch
// (the activations already fit, so only the pools move): each pool frees the block the graph
// was captured with. The freed blocks go to a new owner (the allocator hands them out again,
// proven by address) that fills them with poison; a replay at M on new tokens must then be
// right and leave the new owner's bytes alone. A graph kept on the freed blocks writes its
// scratch over them.
void regrow_then_replay(ProbeState& state, Engine& e, report::CaseResult& c,
                        const std::function<std::uint64_t(int)>& seed) {
  const int m = e.input_tokens();
  const kernels::MoeDims dims = e.layer(0).config().dims;
  std::size_t capacity = 0;
  for (int l = 0; l < e.layers(); ++l) capacity = std::max(capacity, e.layer(l).scratch().capacity());
  // Past the block's whole size class: a regrow that stays in the class would get its own
  // block back from the caching allocator (last in, first out), and nothing would move.
  const int big = regrow_tokens(m, DeviceAllocator::size_class(capacity),
                                [&](int t) { return kernels::forward_scratch_bytes(dims, t); });
  c.evidence["regrow_m"] = big;
  if (big == 0) {
    c.prove("scratch_moved_under_graph", false, "no M up to 65536 needs more scratch than the pools hold");
    c.prove("freed_scratch_taken", false, "no regrow, so no freed block");
    return;
  }
  e.drop_graphs();
  e.set_input(big, seed(300));  // the activations grow now (that drops graphs: not this hazard)
  e.set_input(m, seed(301));
  e.forward();
  e.capture();
  e.stream().drain();
  std::vector<const void*> held;
  std::vector<std::size_t> held_bytes;
  for (int l = 0; l < e.layers(); ++l) {
    held.push_back(e.layer(l).scratch().data());
    held_bytes.push_back(e.layer(l).scratch().capacity());
  }
  e.set_input(big, seed(302));
  e.forward();  // each pool drains, frees the block the graph holds, takes a larger one
  e.stream().drain();
  int moved = 0;
  for (int l = 0; l < e.layers(); ++l) moved += e.layer(l).scratch().data() != held[static_cast<std::size_t>(l)];
  c.prove("scratch_moved_under_graph", moved == e.layers(),
          std::to_string(e.layers() - moved) + " of " + std::to_string(e.layers()) +
              " layers kept their scratch block through the step at M=" + std::to_string(big));

  // The new owner of the freed blocks, poison in every byte.
  std::vector<DeviceBuffer> successor;
  int taken = 0;
  for (std::size_t bytes : held_bytes) {
    successor.push_back(state.allocator().allocate(bytes));
    MOE_CUDA_CHECK(cudaMemsetAsync(successor.back().data(), DeviceAllocator::kPoisonByte,
                                   successor.back().bytes(), e.stream().handle()));
  }
  for (const void* p : held)
    taken += std::any_of(successor.begin(), successor.end(), [&](const DeviceBuffer& b) { return b.data() == p; });
  c.prove("freed_scratch_taken", taken == e.layers(),
          std::to_string(e.layers() - taken) + " of " + std::to_string(e.layers()) +
              " freed scratch blocks were not handed to the new owner (allocator " +
              (state.allocator().mode() == DeviceAllocator::Mode::caching ? "caching" : "plain") + ")");

  const std::size_t recaptured = e.graphs_recaptured();
  e.set_input(m, seed(303));
  poison_outputs(e);
  e.replay();
  e.stream().drain();
  const std::size_t elements = static_cast<std::size_t>(m) * static_cast<std::size_t>(e.config().shape.hidden);
  const std::size_t left = poison_left(e, elements);
  const LayerCheck k = check_layer_output(e.layer(0), e.output(0), m, seed(303),
                                          affordable_tokens(dims, m));
  c.checks.push_back({"replay_after_regrow_matches_reference", k.passed && left == 0,
                      (left ? std::to_string(left) + " outputs still poison; " : std::string()) + k.detail});
  std::size_t overwritten = 0, total = 0;
  for (const DeviceBuffer& b : successor) {
    std::vector<unsigned char> bytes(b.bytes());
    MOE_CUDA_CHECK(cudaMemcpy(bytes.data(), b.data(), bytes.size(), cudaMemcpyDeviceToHost));
    total += bytes.size();
    overwritten += static_cast<std::size_t>(std::count_if(bytes.begin(), bytes.end(), [](unsigned char x) {
      return x != DeviceAllocator::kPoisonByte;
    }));
  }
  c.evidence["graphs_recaptured_after_regrow"] = e.graphs_recaptured() - recaptured;
  c.checks.push_back({"freed_scratch_untouched_by_replay", overwritten == 0,
                      std::to_string(overwritten) + " of " + std::to_string(total) +
                          " bytes of the freed scratch blocks' new owner changed during a replay at M=" +
                          std::to_string(m) + " after the step at M=" + std::to_string(big) +
                          " regrew the scratch (graphs captured again first: " +
                          std::to_string(e.graphs_recaptured() - recaptured) + ")"});
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
      if (capture_watched(e, log, /*check_first=*/false, /*invalidation_is_sync=*/false))
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

    // 5. Repeated replays, each on new tokens written into the graph's input buffer with the
    //    outputs poisoned first, each right for its own input; memory use unchanged.
    const int affordable = affordable_tokens(e.layer(0).config().dims, m);
    const int replay_tokens = affordable == m ? m : std::max(1, affordable / 4);
    const AllocatorStats before = state.allocator().stats();
    ReplayRounds repeated;
    for (int i = 0; i < kRepeatedReplays; ++i)
      replay_on_new_input(e, seed(100 + i), replay_tokens, repeated, "replay " + std::to_string(i + 1));
    const AllocatorStats after = state.allocator().stats();
    c.checks.push_back({"repeated_replays_match_reference",
                        repeated.rounds == kRepeatedReplays && repeated.wrong == 0,
                        std::to_string(repeated.rounds - repeated.wrong) + " of " +
                            std::to_string(kRepeatedReplays) +
                            " replays, each on new tokens with the outputs poisoned before, "
                            "matched the reference of their input (" + std::to_string(replay_tokens) +
                            " tokens of layer 0) and left no poison in any layer" +
                            (repeated.first_wrong.empty() ? "" : "; first wrong: " + repeated.first_wrong)});
    bool same = false;
    const std::string replay_memory = memory_delta(before, after, same);
    c.checks.push_back({"repeated_replays_memory_unchanged", same, replay_memory});

    // 6. Consecutive capture cycles, each replayed on new tokens the same way, stay correct
    //    and do not grow memory.
    bool cycles_ok = true;
    int cycles_captured = 0;
    std::string cycles;
    AllocatorStats cycle_start{};
    ReplayRounds cycle_rounds;
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
      const int wrong = cycle_rounds.wrong;
      replay_on_new_input(e, seed(200 + cycle), replay_tokens, cycle_rounds, "cycle " + std::to_string(cycle));
      const bool ok = cycle_rounds.wrong == wrong;
      cycles_ok = cycles_ok && ok;
      cycles += "cycle " + std::to_string(cycle) + ": " + (ok ? "ok" : cycle_rounds.first_wrong) + "; ";
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
    // Measured, not counted: each replay's input buffer read back with new tokens, and layer
    // 0's output read back as poison, before the replay.
    const int rounds = repeated.rounds + cycle_rounds.rounds;
    const int changed_inputs = repeated.inputs_changed + cycle_rounds.inputs_changed;
    const int poisoned = repeated.poisoned_before + cycle_rounds.poisoned_before;
    c.evidence["replays_on_new_input"] = rounds;
    c.evidence["replay_outputs_left_poison"] = repeated.poison_left + cycle_rounds.poison_left;
    c.prove("replay_inputs_changed", rounds > 0 && changed_inputs == rounds,
            std::to_string(rounds - changed_inputs) + " of " + std::to_string(rounds) +
                " replays found their input buffer unchanged or moved");
    c.prove("outputs_poisoned_before_replays", rounds > 0 && poisoned == rounds,
            std::to_string(rounds - poisoned) + " of " + std::to_string(rounds) +
                " replays started with layer 0's output not all poison");
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
    }

    // 8. A graph outlives a regrow of the scratch it holds.
    regrow_then_replay(state, e, c, seed);

    // 9. Destroying the engine right after a replay (its destructor drains) leaves the
    //    device usable: a round trip, and a fresh engine that matches the reference.
    if (e.captured()) e.replay();
    engine.reset();
    c.checks.push_back(device_usable(state, shape, format, m, "device_usable_after_teardown"));
    c.conclude("every capture hazard checked: refusals, no sync inside, replays after an "
               "input change, " + std::to_string(kRepeatedReplays) + " replays and " +
               std::to_string(kCaptureCycles) + " cycles on new tokens over poisoned outputs "
               "with the allocator's counters unchanged, eager after replay, a replay after "
               "its scratch regrew, teardown" + flags);
    state.add_case(std::move(c));
  }
}

}  // namespace moe
