// Probe ep-drop-inflight (docs/bugs.md, section 7): the cross-rank form of drop-after-inflight.
// Every rank holds its stream (a long GPU sleep), enqueues a step of its sharded layer behind
// it, queues a copy of the output to the probe's own buffer, and drops the layer at once. The
// step, its exchanges included, is provably still in flight (an event recorded behind it is
// pending). The next owner then takes memory of the receive buffers' sizes from the same
// allocator and writes a pattern into it while the exchange is still pending. The layer must
// release its buffers stream-ordered (DeviceAllocator::release_after): no receive block may be
// handed out before the step finished, the successor's bytes must read back unchanged, and the
// dropped step's output must still match the reference. Under the mutation ep-free-recv-early
// the receive buffers go back at once: the successor receives them and the in-flight exchange
// writes its rows over the successor's bytes. PASS needs proof that the race was forced: the
// step pending at the drop and still pending after the successor wrote, and the receive blocks
// handed out again by the allocator (early under the bug, after the step without it).
#if MOEBENCH_HAVE_NCCL
#include <algorithm>
#include <memory>

#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rank_output_check.hpp"
#include "engine/stream.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "kernels/moe/bf16.hpp"
#include "probes/ep_common/ep_worker.hpp"
#include "probes/ep_common/planned_work.hpp"
#include "probes/ep_drop_inflight/drop_inflight_verdict.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

// Long enough that the drop, the successor's allocations and its writes all happen while the
// step is still queued; the probe proves it did (the event still pending after them).
constexpr std::uint64_t kHoldNs = 200'000'000;  // 200 ms
constexpr unsigned char kSuccessorByte = 0xA5;

std::size_t bytes_changed(const DeviceBuffer& b) {
  std::vector<unsigned char> host(b.bytes());
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), b.data(), host.size(), cudaMemcpyDeviceToHost));
  return static_cast<std::size_t>(
      std::count_if(host.begin(), host.end(), [](unsigned char v) { return v != kSuccessorByte; }));
}

std::vector<const void*> handed_out(const DeviceAllocator& memory, std::uint64_t since) {
  std::vector<const void*> out;
  for (const BlockLedger::Entry& e : memory.handed_out_since(since)) out.push_back(e.ptr);
  return out;
}

// One layer, two steps, one checked.
ep::WorkerPlan ep_drop_inflight_plan(const ProbeState& state, int ranks) {
  const kernels::MoeDims dims = shapes_or_default(state, {"deepseek-v2-lite"}).front().dims(kernels::WeightFormat::bf16);
  return {{ep::sharded_layer_case(dims, ms_or_default(state, {32}).front(), ranks, 2, 1)}};
}

void ep_drop_inflight_body(ep::EpWorker& w) {
  ProbeState& state = w.state();
  const Shape shape = shapes_or_default(state, {"deepseek-v2-lite"}).front();
  const int m = ms_or_default(state, {32}).front();
  const kernels::MoeDims dims = shape.dims(kernels::WeightFormat::bf16);
  DeviceAllocator& memory = state.allocator();
  // The probe's own result buffer: never handed to the successor.
  DeviceAllocator results(DeviceAllocator::Mode::plain);
  Stream stream(Stream::SyncPolicy::eager), next_stream(Stream::SyncPolicy::eager);
  ep::ShardedLayerConfig cfg;
  cfg.dims = dims;
  cfg.seed = derive_seed(state.options().seed, 0xED);
  cfg.m = m;
  cfg.options = state.options().engine.forward();  // the engine switches, ep-compute among them
  cfg.exchange = ep::default_exchange_kind();
  ep::RankObservation obs;
  obs.rank = w.rank();
  auto layer = std::make_unique<ep::ShardedLayer>(cfg, ep::ExpertMap::contiguous(dims.experts, w.world()),
                                                  w.comm(), w.rendezvous(), memory, stream.handle());
  layer->generate_input(w.rank() * m);
  const std::vector<float> x = layer->input_host();
  layer->enqueue_step();
  layer->finish("the warm-up step");
  const std::size_t out_bytes = static_cast<std::size_t>(m) * dims.hidden * 2;
  const std::size_t dispatch_bytes = layer->wire().dispatch_bytes();
  const std::size_t combine_bytes = layer->wire().combine_bytes();
  DeviceBuffer out = results.allocate(out_bytes);
  MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, out_bytes, stream.handle()));
  // Every rank's step starts together, so each one's hold covers its peers' drops too.
  w.gather(nlohmann::json{{"rank", w.rank()}});

  kernels::gpu_sleep(kHoldNs, stream.handle());
  layer->enqueue_step();
  // The result leaves the layer by a copy queued behind the step.
  MOE_CUDA_CHECK(cudaMemcpyAsync(out.data(), layer->output_device(), out_bytes,
                                 cudaMemcpyDeviceToDevice, stream.handle()));
  CudaEvent step_done;
  step_done.record(stream.handle());
  obs.receive_buffers = layer->receive_buffers();
  obs.pending_at_drop = still_pending(step_done);
  const std::uint64_t before_successor = memory.mark();
  layer.reset();  // at once, no readback
  {
    // The next owner: the receive buffers of the next request, written on another stream.
    DeviceBuffer next_dispatch = memory.allocate(dispatch_bytes);
    DeviceBuffer next_combine = memory.allocate(combine_bytes);
    for (DeviceBuffer* b : {&next_dispatch, &next_combine})
      MOE_CUDA_CHECK(cudaMemsetAsync(b->data(), kSuccessorByte, b->bytes(), next_stream.handle()));
    next_stream.drain();
    obs.successor_blocks = handed_out(memory, before_successor);
    obs.pending_after_successor = still_pending(step_done);
    // The dropped step ends (watched: a peer that is gone aborts the communicator here).
    w.comm().wait(stream.handle(), "the dropped layer's step");
    obs.successor_bytes = next_dispatch.bytes() + next_combine.bytes();
    obs.successor_bytes_changed = bytes_changed(next_dispatch) + bytes_changed(next_combine);
  }
  std::vector<std::uint16_t> raw(out_bytes / 2);
  MOE_CUDA_CHECK(cudaMemcpy(raw.data(), out.data(), out_bytes, cudaMemcpyDeviceToHost));
  std::vector<float> y(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) y[i] = kernels::bf16_bits_to_float(raw[i]);
  const ep::RankOutputCheck check = ep::check_rank_output(dims, cfg.seed, x, y, m, affordable_tokens(dims, m));
  obs.output_matches = check.passed;
  obs.output_detail = check.detail;
  {
    // After the step: the allocator hands the receive blocks out again (the hazard was real).
    const std::uint64_t after = memory.mark();
    DeviceBuffer a = memory.allocate(dispatch_bytes), b = memory.allocate(combine_bytes);
    const std::vector<const void*> got = handed_out(memory, after);
    for (const void* p : obs.receive_buffers)
      obs.receive_blocks_reused_after_completion += std::count(got.begin(), got.end(), p);
  }

  const std::vector<nlohmann::json> ranks = w.gather(ep::observation_json(obs));
  if (w.rank() != 0) return;
  report::CaseResult c = moe_case(state, "layer", shape, kernels::WeightFormat::bf16, m);
  c.parameters["ranks"] = w.world();
  c.parameters["hold_ns"] = kHoldNs;
  c.parameters["exchange"] = std::string(ep::to_string(cfg.exchange));
  ep::judge_drop_inflight(c, ranks, w.world());
  state.add_case(std::move(c));
}

}  // namespace

void run_ep_drop_inflight_probe(ProbeState& state) { ep::run_ep_probe(state, &ep_drop_inflight_body, &ep_drop_inflight_plan); }

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_drop_inflight_probe(ProbeState&) { ep::ep_not_built("ep-drop-inflight"); }
}  // namespace moe
#endif
