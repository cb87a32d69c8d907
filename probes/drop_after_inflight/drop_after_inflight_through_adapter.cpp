// Probe drop-after-inflight through an engine adapter (--engine; needs device-allocator): case
// "engine" on an engine moebench did not build. The adapter takes its device memory from the
// run's allocator (moebench lends it), so what its destroy hands back, and who receives it next,
// is on that allocator's record as with moebench's own engine. A step is queued behind 50 ms of
// other work, the adapter's destroy is called at once, and while moebench still holds that step's
// stream and weights, the next request (another engine through the same adapter, another seed,
// its own stream) is built and run: it receives the blocks the destroy gave back and writes
// them. If the destroy did not wait for its step (nor free behind it), the pending step reads
// the next engine's tables and scratch, and its output, checked over every token, is wrong.
#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "engine/external/external_engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "probes/drop_after_inflight/drop_verdict.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

void run_drop_after_inflight_through_adapter(ProbeState& state) {
  const auto& adapter = state.options().adapter;
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    const std::size_t elements = static_cast<std::size_t>(m) * shape.hidden;
    report::CaseResult c = state.start_case(point);
    c.evidence["engine_adapter"] = {{"name", adapter->name()}, {"version", adapter->version()}};
    // The probe's own result buffer: never handed to the next request.
    DeviceAllocator results(DeviceAllocator::Mode::plain);
    DeviceBuffer out = results.allocate(elements * 2);
    const std::uint64_t input_seed = derive_seed(state.options().seed, 41, m);
    DeviceAllocator& memory = state.allocator();
    const EngineConfig config = engine_config(state, shape, format, 44, 2);

    auto engine = std::make_unique<external::ExternalEngine>(adapter, config, m, memory);
    engine->set_input(m, input_seed);
    engine->forward();  // warm-up
    engine->stream().drain();
    const LayerReference ref = LayerReference::of(engine->weights(0));
    const cudaStream_t stream = engine->stream().handle();
    MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, elements * 2, stream));
    kernels::gpu_sleep(kQueueAheadNs, stream);
    engine->forward();
    // The result leaves the engine by a copy queued behind the step.
    MOE_CUDA_CHECK(cudaMemcpyAsync(out.data(), engine->output(0), elements * 2, cudaMemcpyDeviceToDevice, stream));
    CudaEvent step_done;
    step_done.record(stream);
    const bool pending = still_pending(step_done);
    const std::uint64_t before_destroy = memory.mark();
    engine->destroy();  // the adapter's destroy at once, no readback
    const std::uint64_t before_next = memory.mark();
    {
      EngineConfig next = config;
      next.seed = derive_seed(state.options().seed, 45);
      external::ExternalEngine successor(adapter, next, m, memory);
      successor.set_input(m, derive_seed(state.options().seed, 46, m));
      successor.forward();
      successor.stream().drain();
    }
    engine.reset();  // moebench's side: a drain, then its weights
    c.evidence["blocks_lent_to_adapters"] = "the adapter's device memory comes from the run's allocator";
    conclude_drop_case(c,
                       check_output(ref, copy_to_host(out.as<__nv_bfloat16>(), elements), m, input_seed, nullptr,
                                    kAllTokens),
                       device_usable(state, shape, format, m, "device_usable_after"), pending,
                       freed_blocks_received(memory, before_destroy, before_next), "engine");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
