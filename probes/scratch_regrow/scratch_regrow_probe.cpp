// Probe `scratch-regrow` (docs/bugs.md, bug 2): one layer cycled through growing and shrinking M with no
// drain between calls; every output is kept in its own buffer and checked over every token
// after the schedule, so the host does nothing between enqueues but enqueue. A GPU sleep before
// each call keeps the previous call pending when the next one regrows the scratch pool; the
// probe then acts as a concurrent request that receives the freed block (same size class, so
// the caching allocator hands it out at once) and writes it from another stream while the
// pending call runs. A pool that frees without draining gets its in-flight call corrupted.
// Each regrow counts as forced only when proven: the previous call's event was still pending
// just before it, and the block the other request received is the one the pool freed (by
// address). PASS needs every regrow forced; INCONCLUSIVE otherwise, naming the regrows.
#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "engine/engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

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
    Stream stream, other;
    LayerConfig lc;
    lc.dims = dims;
    lc.seed = derive_seed(state.options().seed, 50);
    lc.options = state.options().engine.forward();
    MoeLayer layer(lc, state.allocator(), stream);
    const LayerReference ref = LayerReference::of(layer);
    DeviceAllocator results(DeviceAllocator::Mode::plain);

    struct Call {
      int m;
      std::uint64_t input_seed;
      DeviceBuffer x, out;
      std::unique_ptr<CudaEvent> done;
    };
    // The other request's kernel loaded now: a lazy load at its first launch, after the first
    // regrow, may wait for the pending call and so hide the bug.
    kernels::preload_interference_kernels();
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
    std::vector<DeviceBuffer> other_requests;
    int regrows = 0, pending_at_regrow = 0, blocks_taken = 0;
    nlohmann::json regrow_log = nlohmann::json::array();
    std::string unforced;  // the first regrow that was not forced, and why
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
      // Just before the forward that may regrow: is the previous call still in flight?
      const bool previous_pending = i > 0 && still_pending(*calls[i - 1].done);
      layer.forward(call.x.as<__nv_bfloat16>(), call.out.as<__nv_bfloat16>(), call.m);
      call.done->record(stream.handle());
      if (capacity != 0 && layer.scratch().capacity() != capacity) {
        ++regrows;
        // Not a proof (a pool that drains finishes it), but where a missing drain went
        // uncaught this says whether something else in the forward waited for the call.
        const bool pending_after_forward = i > 0 && still_pending(*calls[i - 1].done);
        // Another request allocates what the pool just gave back and writes it at once.
        DeviceBuffer taken = state.allocator().allocate(capacity);
        // The freed block went to the other request, or (a new size in the same class) back
        // to the pool itself, whose new call then writes it under the pending one: either
        // way the next user of the block writes it while the previous call may read it.
        const bool same_block = taken.data() == old_block || layer.scratch().data() == old_block;
        kernels::scribble(taken.data(), taken.bytes(), 0u, kScribbleNs, other.handle());
        other_requests.push_back(std::move(taken));
        pending_at_regrow += previous_pending;
        blocks_taken += same_block;
        regrow_log.push_back({{"call", i},
                              {"m", call.m},
                              {"previous_call_pending", previous_pending},
                              {"previous_call_pending_after_forward", pending_after_forward},
                              {"freed_block", hex(old_block)},
                              {"other_request_received", hex(other_requests.back().data())},
                              {"pool_received", hex(layer.scratch().data())},
                              {"same_block", same_block}});
        if (unforced.empty() && (!previous_pending || !same_block))
          unforced = "regrow at call " + std::to_string(i) + " (M=" + std::to_string(call.m) +
                     "): " + (!previous_pending ? "the previous call had already finished" :
                     "neither the other request (" + hex(other_requests.back().data()) +
                     ") nor the pool (" + hex(layer.scratch().data()) +
                     ") received the freed block " + hex(old_block));
      }
      calls.push_back(std::move(call));
    }
    other.drain();
    stream.drain();
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
    c.evidence["calls"] = calls.size();
    c.evidence["regrows"] = regrows;
    c.evidence["regrows_under_pending_call"] = pending_at_regrow;
    c.evidence["freed_blocks_taken_by_other_request"] = blocks_taken;
    c.evidence["regrow_log"] = regrow_log;
    c.evidence["final_scratch_bytes"] = layer.scratch().capacity();
    c.prove("regrew", regrows > 0, "the schedule never regrew the scratch pool");
    c.prove("every_regrow_under_pending_call", regrows > 0 && pending_at_regrow == regrows,
            std::to_string(regrows - pending_at_regrow) + " of " + std::to_string(regrows) +
                " regrows found the previous call finished; first unforced: " + unforced);
    c.prove("every_freed_block_taken", regrows > 0 && blocks_taken == regrows,
            std::to_string(regrows - blocks_taken) + " of " + std::to_string(regrows) +
                " freed blocks went elsewhere; first unforced: " + unforced);
    c.conclude(std::to_string(regrows) + " regrows, each under a pending call with its freed "
               "block written by another request; every output right over every token");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
