// Probe `drop-after-inflight` (docs/bugs.md, bug 2): a forward is enqueued behind other work, so it
// is still pending, and its owner (a layer; separately, an engine) is destroyed at once with no
// readback. The next request then builds the same shape with another seed on another stream: the
// caching allocator hands it the freed blocks and it writes its weights there. If the destructor
// did not wait, the pending forward reads the new weights and its output, which the probe checks,
// is wrong. Afterwards the device must still be usable.
#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

// Long enough that everything the host does next happens while the forward is still queued.
constexpr std::uint64_t kQueueAheadNs = 50'000'000;  // 50 ms

// The probe's verdict: the pending output was right and the device usable afterwards.
void conclude(report::CaseResult& c, const LayerCheck& inflight, report::Check usable) {
  c.checks.push_back(inflight.as_check("inflight_output_matches_reference"));
  c.checks.push_back(std::move(usable));
  c.conclude_from_checks();
}

}  // namespace

void run_drop_after_inflight_probe(ProbeState& state) {
  for (const Shape& shape : shapes_or_default(state, {"tiny"})) {
    for (kernels::WeightFormat format : formats_or_bf16(state)) {
      for (int m : ms_or_default(state, {16})) {
        const kernels::MoeDims dims = shape.dims(format);
        const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
        // The probe's own input and result buffers: never handed to the next request.
        DeviceAllocator results(DeviceAllocator::Mode::plain);
        DeviceBuffer x = results.allocate(elements * 2), out = results.allocate(elements * 2);
        const std::uint64_t input_seed = derive_seed(state.options().seed, 41, m);

        // --- a layer dropped with its forward in flight ---
        {
          report::CaseResult c = moe_case(state, "layer", shape, format, m);
          Stream stream;
          LayerConfig lc;
          lc.dims = dims;
          lc.seed = derive_seed(state.options().seed, 42);
          lc.options = state.options().engine.forward();
          auto layer = std::make_unique<MoeLayer>(lc, state.allocator(), stream);
          const LayerReference ref = LayerReference::of(*layer);
          kernels::generate_input(dims, m, input_seed, x.as<__nv_bfloat16>(), stream.handle());
          layer->forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), m);  // warm-up
          stream.drain();
          MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, elements * 2, stream.handle()));
          kernels::gpu_sleep(kQueueAheadNs, stream.handle());
          layer->forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), m);
          layer.reset();  // at once, no readback
          {
            // The next request: same shape, another seed, another stream.
            Stream next_stream;
            LayerConfig next = lc;
            next.seed = derive_seed(state.options().seed, 43);
            MoeLayer successor(next, state.allocator(), next_stream);
            next_stream.drain();
            stream.drain();
          }
          conclude(c, check_output(ref, copy_to_host(out.as<__nv_bfloat16>(), elements), m,
                                   input_seed, nullptr),
                   device_usable(state, shape, format, m, "device_usable_after"));
          if (c.reason.empty()) c.reason = "the layer waited for its in-flight forward";
          state.add_case(std::move(c));
        }

        // --- an engine dropped with its step in flight ---
        {
          report::CaseResult c = moe_case(state, "engine", shape, format, m);
          const EngineConfig config = engine_config(state, shape, format, 44, 2);
          auto engine = std::make_unique<Engine>(config, state.allocator(), state.device());
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
          engine.reset();  // at once, no readback
          {
            EngineConfig next = config;
            next.seed = derive_seed(state.options().seed, 45);
            Engine successor(next, state.allocator(), state.device());
            successor.set_input(m, derive_seed(state.options().seed, 46, m));
            successor.forward();
            successor.stream().drain();
          }
          MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the dropped engine's stream is gone
          conclude(c, check_output(ref, copy_to_host(out.as<__nv_bfloat16>(), elements), m,
                                   input_seed, nullptr),
                   device_usable(state, shape, format, m, "device_usable_after"));
          if (c.reason.empty()) c.reason = "the engine waited for its in-flight step";
          state.add_case(std::move(c));
        }
      }
    }
  }
}

}  // namespace moe
