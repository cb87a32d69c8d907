// Probe `drop-after-inflight` (docs/bugs.md, bug 2): a forward is enqueued behind other work, so it is
// still pending, and its owner (a layer; separately, an engine) is destroyed at once with no
// readback. The next request then builds the same shape with another seed on another stream:
// the caching allocator hands it the freed blocks and it writes its weights there. If the
// destructor did not wait, the pending forward reads the new weights and its output, which the
// probe checks over every token, is wrong. Afterwards the device must still be usable. PASS
// needs proof of both halves of the hazard: the forward was still pending just before the
// destroy, and the next request received blocks the destroy freed (INCONCLUSIVE otherwise).
#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "engine/engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/evidence.hpp"
#include "probes/drop_after_inflight/drop_verdict.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
// A layer is moebench's own object: through an adapter only case engine runs.
std::vector<std::string> drop_cases(const RunOptions& options) {
  if (options.adapter) return {"engine"};
  return {"layer", "engine"};
}
}  // namespace

extern const SweepDeclaration drop_after_inflight_sweep;
const SweepDeclaration drop_after_inflight_sweep{.cases = {"layer", "engine"},
                                                 .shapes = {"tiny"},
                                                 .ms = {16},
                                                 .formats = kBf16Only,
                                                 .cases_for = &drop_cases};

// Through an engine adapter (--engine): drop_after_inflight_through_adapter.cpp.
void run_drop_after_inflight_through_adapter(ProbeState& state);

void run_drop_after_inflight_probe(ProbeState& state) {
  if (state.options().adapter) return run_drop_after_inflight_through_adapter(state);
  // Cases layer and engine per shape, format and M, sharing the input and result buffers.
  for (std::span<const SweepPoint> m_points : runs_of(state.points(), SweepAxis::m)) {
    const Shape& shape = *m_points.front().shape;
    const kernels::WeightFormat format = *m_points.front().format;
    const int m = *m_points.front().m;
    const kernels::MoeDims dims = shape.dims(format);
    const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
    // The probe's own input and result buffers: never handed to the next request.
    DeviceAllocator results(DeviceAllocator::Mode::plain);
    DeviceBuffer x = results.allocate(elements * 2), out = results.allocate(elements * 2);
    const std::uint64_t input_seed = derive_seed(state.options().seed, 41, m);
    DeviceAllocator& memory = state.allocator();
    // Both cases end alike: the blocks freed between the marks that the next request
    // received, and the pending result checked over every token.
    auto finish = [&](report::CaseResult& c, const LayerReference& ref, bool pending,
                      std::uint64_t before_destroy, std::uint64_t before_next, const char* owner) {
      const BlockReuse reuse = freed_blocks_received(memory, before_destroy, before_next);
      conclude_drop_case(c,
               check_output(ref, copy_to_host(out.as<__nv_bfloat16>(), elements), m,
                            input_seed, nullptr, kAllTokens),
               device_usable(state, shape, format, m, "device_usable_after"), pending, reuse,
               owner);
    };

    // --- a layer dropped with its forward in flight ---
    if (const SweepPoint* point = find_case(m_points, "layer")) {
      report::CaseResult c = state.start_case(*point);
      Stream stream;
      LayerConfig lc;
      lc.dims = dims;
      lc.seed = derive_seed(state.options().seed, 42);
      lc.options = state.options().engine.forward();
      auto layer = std::make_unique<MoeLayer>(lc, memory, stream);
      const LayerReference ref = LayerReference::of(*layer);
      kernels::generate_input(dims, m, input_seed, x.as<__nv_bfloat16>(), stream.handle());
      layer->forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), m);  // warm-up
      stream.drain();
      MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, elements * 2, stream.handle()));
      kernels::gpu_sleep(kQueueAheadNs, stream.handle());
      layer->forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), m);
      CudaEvent forward_done;
      forward_done.record(stream.handle());
      const bool pending = still_pending(forward_done);
      const std::uint64_t before_destroy = memory.mark();
      layer.reset();  // at once, no readback
      const std::uint64_t before_next = memory.mark();
      {
        // The next request: same shape, another seed, another stream.
        Stream next_stream;
        LayerConfig next = lc;
        next.seed = derive_seed(state.options().seed, 43);
        MoeLayer successor(next, memory, next_stream);
        next_stream.drain();
        stream.drain();
      }
      finish(c, ref, pending, before_destroy, before_next, "layer");
      state.add_case(std::move(c));
    }

    // --- an engine dropped with its step in flight ---
    if (const SweepPoint* point = find_case(m_points, "engine")) {
      report::CaseResult c = state.start_case(*point);
      const EngineConfig config = engine_config(state, shape, format, 44, 2);
      auto engine = std::make_unique<Engine>(config, memory, state.device());
      engine->set_input(m, input_seed);
      engine->forward();  // warm-up
      engine->stream().drain();
      const LayerReference ref = LayerReference::of(engine->layer(0));
      MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, elements * 2, engine->stream().handle()));
      kernels::gpu_sleep(kQueueAheadNs, engine->stream().handle());
      engine->forward();
      // The result leaves the engine by a copy queued behind the step.
      MOE_CUDA_CHECK(cudaMemcpyAsync(out.data(), engine->output(0), elements * 2,
                                     cudaMemcpyDeviceToDevice, engine->stream().handle()));
      CudaEvent step_done;
      step_done.record(engine->stream().handle());
      const bool pending = still_pending(step_done);
      const std::uint64_t before_destroy = memory.mark();
      engine.reset();  // at once, no readback
      const std::uint64_t before_next = memory.mark();
      {
        EngineConfig next = config;
        next.seed = derive_seed(state.options().seed, 45);
        Engine successor(next, memory, state.device());
        successor.set_input(m, derive_seed(state.options().seed, 46, m));
        successor.forward();
        successor.stream().drain();
      }
      MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the dropped engine's stream is gone
      finish(c, ref, pending, before_destroy, before_next, "engine");
      state.add_case(std::move(c));
    }
  }
}

}  // namespace moe
