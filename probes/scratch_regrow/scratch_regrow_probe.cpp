// Probe `scratch-regrow` (docs/bugs.md, bug 2): one layer cycled through growing and shrinking M with no
// drain between calls; every output is kept in its own buffer and checked over every token
// after the schedule, so the host does nothing between enqueues but enqueue. A GPU sleep before
// each call keeps the previous call pending when the next one regrows the scratch pool. The
// layer's memory is lent by the probe (freed_block_handoff.hpp): the block a regrow frees goes
// at once, inside the free, to another stream's request, which writes it from an idle stream of
// its own. A pool that frees without draining gets its in-flight call corrupted.
// A regrow counts as forced only when proven: the previous call's event was still pending just
// before it, and the block another stream received is the one the pool freed (by address), the
// pool itself working on a new one. PASS needs every regrow forced; INCONCLUSIVE otherwise.
// Whether the other stream's write ran while the previous call was pending is measured too
// (its event queried the moment the write was enqueued; the write's start and the call's end
// timed by events): that is the bug itself, a FAIL of freed_block_not_written_under_pending_call.
#include <optional>

#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "engine/engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"
#include "probes/scratch_regrow/freed_block_handoff.hpp"

namespace moe {

namespace {
const std::vector<int> kSchedule{1, 8, 8, 2, 8, 4, 16, 1, 16, 2, 64, 3, 256, 1, 512, 5};
constexpr std::uint64_t kQueueAheadNs = 3'000'000;   // 3 ms before each call
constexpr std::uint64_t kScribbleNs = 10'000'000;    // the other request writes for 10 ms
constexpr int kAllTokens = 1 << 30;
}  // namespace

extern const SweepDeclaration scratch_regrow_sweep;
const SweepDeclaration scratch_regrow_sweep{
    .cases = {"schedule"}, .shapes = {"tiny"}, .formats = kBf16Only};

void run_scratch_regrow_probe(ProbeState& state) {
  // No M axis: --m replaces the schedule, which is one case.
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const std::vector<int> schedule = state.options().user_set_ms ? state.options().ms : kSchedule;
    report::CaseResult c = state.start_case(point);
    c.parameters["schedule"] = schedule;
    const kernels::MoeDims dims = shape.dims(format);
    Stream stream;
    LayerConfig lc;
    lc.dims = dims;
    lc.seed = derive_seed(state.options().seed, 50);
    lc.options = state.options().engine.forward();
    // The layer's memory: lent through the handoff, which gives every freed block to another
    // stream's request first (the run's allocator mode does not apply here).
    DeviceAllocator backing(DeviceAllocator::Mode::plain);
    FreedBlockHandoff handoff(backing);
    DeviceAllocator lent(DeviceAllocator::Mode::plain, DeviceAllocator::Freed::reuse, handoff.source());
    MoeLayer layer(lc, lent, stream);
    const LayerReference ref = LayerReference::of(layer);
    DeviceAllocator results(DeviceAllocator::Mode::plain);

    struct Call {
      int m;
      std::uint64_t input_seed;
      DeviceBuffer x, out;
      std::unique_ptr<CudaEvent> done;
    };
    // What happened to the block one regrow freed, measured inside the free.
    struct Handed {
      const void* block = nullptr;
      bool previous_pending_at_free = false;     // cudaEventQuery just before the write
      bool previous_pending_when_written = false;  // ... and just after it was enqueued
      std::unique_ptr<CudaEvent> write_began;    // on the writer's idle stream, before it
    };
    // The other request's kernel loaded now: a lazy load at its first launch, after the first
    // regrow, may wait for the pending call and so hide the bug.
    kernels::preload_interference_kernels();
    // One idle stream for each write, made now (not inside a free), so no write queues behind
    // an earlier one and each starts the moment it is enqueued.
    std::vector<std::unique_ptr<Stream>> writers;
    for (std::size_t i = 0; i < schedule.size(); ++i) writers.push_back(std::make_unique<Stream>());
    // Warm-up at the first M, drained: the first forward allocates the scratch (draining a
    // stream whose sleep it waits out) and builds the resident tables, so the schedule's first
    // call, like every call after a regrow, stays queued behind its own sleep.
    {
      const int m0 = schedule.front();
      const std::size_t elements = static_cast<std::size_t>(m0) * shape.hidden;
      DeviceBuffer x = results.allocate(elements * 2), out = results.allocate(elements * 2);
      kernels::generate_input(dims, m0, derive_seed(state.options().seed, 52), x.as<__nv_bfloat16>(),
                              stream.handle());
      layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), m0);
      stream.drain();
    }
    std::vector<Call> calls;
    int regrows = 0, pending_at_regrow = 0, blocks_taken = 0, written_under_pending = 0;
    nlohmann::json regrow_log = nlohmann::json::array();
    std::string unforced;  // the first regrow that was not forced, and why
    std::vector<std::pair<std::size_t, Handed>> handed;  // (regrow_log entry, what it freed)
    for (std::size_t i = 0; i < schedule.size(); ++i) {
      Call call;
      call.m = schedule[i];
      call.input_seed = derive_seed(state.options().seed, 51, i);
      const std::size_t elements = static_cast<std::size_t>(call.m) * shape.hidden;
      call.x = results.allocate(elements * 2);
      call.out = results.allocate(elements * 2);
      call.done = std::make_unique<CudaEvent>();
      kernels::generate_input(dims, call.m, call.input_seed, call.x.as<__nv_bfloat16>(),
                              stream.handle());
      MOE_CUDA_CHECK(cudaMemsetAsync(call.out.data(), 0xff, elements * 2, stream.handle()));
      kernels::gpu_sleep(kQueueAheadNs, stream.handle());
      const std::size_t capacity = layer.scratch().capacity();
      const void* old_block = layer.scratch().data();
      const CudaEvent* previous_done = i > 0 ? calls[i - 1].done.get() : nullptr;
      // Just before the forward that may regrow: is the previous call still in flight?
      const bool previous_pending = previous_done && still_pending(*previous_done);
      // The other request, inside the free: it takes the block and writes it at once.
      std::vector<Handed> freed_now;
      Stream& writer = *writers[i];
      std::optional<FreedBlockHandoff::Receiving> receiving;
      receiving.emplace(handoff, [&](const DeviceBuffer& block) {
        Handed h;
        h.block = block.data();
        h.previous_pending_at_free = previous_done && still_pending(*previous_done);
        h.write_began = std::make_unique<CudaEvent>();
        h.write_began->record(writer.handle());
        kernels::scribble(block.data(), block.bytes(), 0u, kScribbleNs, writer.handle());
        h.previous_pending_when_written = previous_done && still_pending(*previous_done);
        freed_now.push_back(std::move(h));
      });
      layer.forward(call.x.as<__nv_bfloat16>(), call.out.as<__nv_bfloat16>(), call.m);
      receiving.reset();
      if (!handoff.receiver_error().empty())
        throw Error(ExitCode::probe_error, "scratch-regrow: the other request failed inside a free: " +
                                               handoff.receiver_error());
      call.done->record(stream.handle());
      if (capacity != 0 && layer.scratch().capacity() != capacity) {
        ++regrows;
        // Not a proof (a pool that drains finishes it), but where a missing drain went
        // uncaught this says whether something else in the forward waited for the call.
        const bool pending_after_forward = previous_done && still_pending(*previous_done);
        // Forced: the block the pool freed went to the other stream, the pool got a new one.
        Handed* h = nullptr;
        for (Handed& f : freed_now)
          if (f.block == old_block) h = &f;
        const bool taken_by_other = h && layer.scratch().data() != old_block;
        const bool written_pending = h && h->previous_pending_when_written;
        pending_at_regrow += previous_pending;
        blocks_taken += taken_by_other;
        written_under_pending += written_pending;
        regrow_log.push_back({{"call", i},
                              {"m", call.m},
                              {"previous_call_pending", previous_pending},
                              {"previous_call_pending_after_forward", pending_after_forward},
                              {"freed_block", hex(old_block)},
                              {"other_stream_received", h ? hex(h->block) : "nothing"},
                              {"pool_received", hex(layer.scratch().data())},
                              {"taken_by_other_stream", taken_by_other},
                              {"previous_call_pending_at_free", h && h->previous_pending_at_free},
                              {"previous_call_pending_when_written", written_pending}});
        if (unforced.empty() && (!previous_pending || !taken_by_other))
          unforced = "regrow at call " + std::to_string(i) + " (M=" + std::to_string(call.m) +
                     "): " + (!previous_pending ? "the previous call had already finished" :
                     !h ? "the pool never freed its block " + hex(old_block) :
                     "the pool received its freed block " + hex(old_block) + " back");
        if (h && previous_done) handed.emplace_back(regrow_log.size() - 1, std::move(*h));
      }
      calls.push_back(std::move(call));
    }
    for (auto& w : writers) w->drain();
    stream.drain();
    // Timed now that both ran: how long the previous call went on after the other stream's
    // write began (above 0: the write ran while the call that reads the block was pending).
    for (auto& [entry, h] : handed) {
      const std::size_t call = regrow_log[entry]["call"].get<std::size_t>();
      regrow_log[entry]["previous_call_ended_ms_after_write_began"] =
          calls[call - 1].done->elapsed_ms_since(*h.write_began);
    }
    int failures = 0;
    std::string first_failure;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const Call& call = calls[i];
      const std::size_t elements = static_cast<std::size_t>(call.m) * shape.hidden;
      const LayerCheck k = check_output(ref, copy_to_host(call.out.as<__nv_bfloat16>(), elements),
                                        call.m, call.input_seed, nullptr, kAllTokens);
      if (!k.passed) {
        ++failures;
        if (first_failure.empty())
          first_failure = "call " + std::to_string(i) + " (M=" + std::to_string(call.m) +
                          "): " + k.detail;
      }
    }
    c.checks.push_back({"every_call_matches_reference", failures == 0,
                        std::to_string(failures) + " of " + std::to_string(calls.size()) +
                            " calls wrong (every token checked)" +
                            (first_failure.empty() ? "" : "; first: " + first_failure)});
    c.checks.push_back({"freed_block_not_written_under_pending_call", written_under_pending == 0,
                        std::to_string(written_under_pending) + " of " + std::to_string(regrows) +
                            " freed blocks were written by another stream while the call "
                            "that reads them was still pending (its event queried as the "
                            "write was enqueued; see evidence.regrow_log)"});
    c.evidence["calls"] = calls.size();
    c.evidence["regrows"] = regrows;
    c.evidence["regrows_under_pending_call"] = pending_at_regrow;
    c.evidence["freed_blocks_taken_by_other_stream"] = blocks_taken;
    c.evidence["freed_blocks_written_under_pending_call"] = written_under_pending;
    c.evidence["regrow_log"] = regrow_log;
    c.evidence["final_scratch_bytes"] = layer.scratch().capacity();
    c.prove("regrew", regrows > 0, "the schedule never regrew the scratch pool");
    c.prove("every_regrow_under_pending_call", regrows > 0 && pending_at_regrow == regrows,
            std::to_string(regrows - pending_at_regrow) + " of " + std::to_string(regrows) +
                " regrows found the previous call finished; first unforced: " + unforced);
    c.prove("every_freed_block_taken_by_other_stream", regrows > 0 && blocks_taken == regrows,
            std::to_string(regrows - blocks_taken) + " of " + std::to_string(regrows) +
                " freed blocks did not go to another stream's request; first unforced: " + unforced);
    c.conclude(std::to_string(regrows) + " regrows, each under a pending call with its freed "
               "block taken and written by another stream's request; every output right over "
               "every token");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
