// Probe `scratch-regrow` (docs/bugs.md, bug 2): one layer cycled through growing and shrinking M
// with no drain between calls, each output read back one call behind and checked. A GPU sleep
// before each call keeps the previous call pending when the next one regrows the scratch pool; the
// probe then acts as a concurrent request that receives the freed block (same size class, so the
// caching allocator hands it out at once) and writes it from another stream while the pending call
// runs. A pool that frees without draining gets its in-flight call corrupted.
#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "engine/engine.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
const std::vector<int> kSchedule{1, 8, 8, 2, 8, 4, 16, 1, 16, 2, 64, 3, 256, 1, 512, 5};
constexpr std::uint64_t kQueueAheadNs = 3'000'000;   // 3 ms before each call
constexpr std::uint64_t kScribbleNs = 10'000'000;    // the other request writes for 10 ms
}  // namespace

void run_scratch_regrow_probe(ProbeState& state) {
  for (const Shape& shape : shapes_or_default(state, {"tiny"})) {
    for (kernels::WeightFormat format : formats_or_bf16(state)) {
      const std::vector<int> schedule = state.options().user_set_ms ? state.options().ms : kSchedule;
      report::CaseResult c = moe_case(state, "schedule", shape, format);
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
      std::vector<Call> calls;
      std::vector<DeviceBuffer> other_requests;
      int regrows = 0, freed_blocks_taken = 0, failures = 0;
      std::string first_failure;
      auto check = [&](Call& call, std::size_t index) {
        MOE_CUDA_CHECK(cudaEventSynchronize(call.done->handle()));
        const std::size_t elements = static_cast<std::size_t>(call.m) * shape.hidden;
        const LayerCheck k = check_output(ref, copy_to_host(call.out.as<__nv_bfloat16>(), elements),
                                          call.m, call.input_seed, nullptr, 4);
        if (!k.passed) {
          ++failures;
          if (first_failure.empty())
            first_failure = "call " + std::to_string(index) + " (M=" + std::to_string(call.m) +
                            "): " + k.detail;
        }
      };
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
        layer.forward(call.x.as<__nv_bfloat16>(), call.out.as<__nv_bfloat16>(), call.m);
        call.done->record(stream.handle());
        if (capacity != 0 && layer.scratch().capacity() != capacity) {
          ++regrows;
          // Another request allocates what the pool just gave back and writes it at once.
          DeviceBuffer taken = state.allocator().allocate(capacity);
          ++freed_blocks_taken;
          kernels::scribble(taken.data(), taken.bytes(), 0u, kScribbleNs, other.handle());
          other_requests.push_back(std::move(taken));
        }
        calls.push_back(std::move(call));
        if (i > 0) check(calls[i - 1], i - 1);  // one call behind
      }
      check(calls.back(), calls.size() - 1);
      other.drain();
      stream.drain();
      c.checks.push_back({"every_call_matches_reference", failures == 0,
                          std::to_string(failures) + " of " + std::to_string(calls.size()) +
                              " calls wrong" + (first_failure.empty() ? "" : "; first: " + first_failure)});
      c.evidence = {{"calls", calls.size()},
                    {"regrows", regrows},
                    {"freed_blocks_taken_by_other_request", freed_blocks_taken},
                    {"final_scratch_bytes", layer.scratch().capacity()}};
      c.conclude_from_checks();
      if (c.verdict == report::Verdict::pass && regrows == 0) {
        c.verdict = report::Verdict::inconclusive;
        c.reason = "the schedule never regrew the scratch pool";
      } else if (c.reason.empty()) {
        c.reason = std::to_string(regrows) + " regrows under in-flight calls, every output right";
      }
      state.add_case(std::move(c));
    }
  }
}

}  // namespace moe
