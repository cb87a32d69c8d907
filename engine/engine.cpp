#include "engine/engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "common/cuda_check.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/moe/generate.hpp"

namespace moe {

namespace {
std::atomic<std::uint64_t> g_next_instance{1};
constexpr int kMaxLayers = 32;
constexpr std::size_t kWorkingSetOverL2 = 4;
}  // namespace

LayerPlan plan_layers(const EngineConfig& config, const Device& device) {
  const kernels::MoeDims dims = config.shape.dims(config.format);
  LayerPlan p;
  std::size_t expert = 0;
  for (auto kind : {kernels::TensorKind::gate_up, kernels::TensorKind::down})
    expert += kernels::expert_weight_bytes(dims, kind) + kernels::expert_scale_bytes(dims, kind);
  p.layer_bytes = kernels::router_bytes(dims) + expert * static_cast<std::size_t>(dims.total_experts());
  p.step_bytes_m1 = kernels::router_bytes(dims) +
                    expert * static_cast<std::size_t>(dims.top_k + dims.shared);
  if (config.layers > 0) {
    p.wanted = config.layers;
  } else {
    const std::size_t target = kWorkingSetOverL2 * std::max<std::size_t>(device.l2_bytes, 1);
    p.wanted = static_cast<int>(std::clamp<std::size_t>(
        (target + p.step_bytes_m1 - 1) / p.step_bytes_m1, 1, kMaxLayers));
    if (config.max_layers > 0) p.wanted = std::min(p.wanted, config.max_layers);
    // The historic cache-measuring benchmark: one layer's weights, replayed every sample.
    if (mutation_active(Mutation::hot_cache_timing)) p.wanted = 1;
  }
  const auto budget =
      static_cast<std::size_t>(config.memory_fraction * static_cast<double>(device.free_memory()));
  const std::size_t fit = budget / p.layer_bytes;
  if (fit == 0)
    throw EnvironmentError("shape " + config.shape.name + " (" +
                           std::string(kernels::to_string(config.format)) + ") needs " +
                           std::to_string(p.layer_bytes >> 20) + " MiB for one layer; " +
                           std::to_string(budget >> 20) + " MiB of device memory is available");
  p.layers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(p.wanted), fit));
  p.reduced = p.layers < p.wanted;
  return p;
}

std::uint64_t layer_seed(std::uint64_t engine_seed, int layer) {
  return engine_seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(layer) + 1;
}

Engine::Engine(const EngineConfig& config, DeviceAllocator& allocator, const Device& device,
               WeightsArena* arena)
    : config_(config), allocator_(allocator), plan_(plan_layers(config, device)),
      instance_(g_next_instance.fetch_add(1)) {
  MOE_CUDA_CHECK(cudaGetDevice(&device_ordinal_));
  if (arena && arena->slots() < plan_.layers)
    throw Error(ExitCode::probe_error, "weights arena has " + std::to_string(arena->slots()) +
                                           " slots, the engine needs " +
                                           std::to_string(plan_.layers));
  const kernels::MoeDims dims = config_.shape.dims(config_.format);
  for (int l = 0; l < plan_.layers; ++l) {
    LayerConfig lc;
    lc.dims = dims;
    lc.seed = layer_seed(config_.seed, l);
    lc.routing = config_.routing;
    lc.path = config_.path;
    lc.options = config_.options;
    layers_.push_back(std::make_unique<MoeLayer>(lc, allocator_, stream_,
                                                 arena ? arena->slot(l) : nullptr));
  }
}

Engine::~Engine() {
  if (!mutation_active(Mutation::drop_without_drain)) {
    try {
      stream_.drain();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moebench: drain in ~Engine failed: %s\n", e.what());
    }
  }
  graphs_.clear();
  layers_.clear();  // each layer drains again (cheap) unless the mutation is on
}

void Engine::ensure_activations(int m) {
  if (m <= capacity_m_) return;
  stream_.drain();  // old activations may still be read by enqueued steps
  const std::size_t row = static_cast<std::size_t>(config_.shape.hidden) * sizeof(__nv_bfloat16);
  x_ = allocator_.allocate(row * static_cast<std::size_t>(m));
  out_ = allocator_.allocate(row * static_cast<std::size_t>(m) * layers_.size());
  capacity_m_ = m;
  graphs_.clear();  // they point at the old activations
}

void Engine::set_input(int m, std::uint64_t seed) {
  if (m < 1) throw UsageError("M must be at least 1, got " + std::to_string(m));
  ensure_activations(m);
  kernels::generate_input(config_.shape.dims(config_.format), m, seed, x_.as<__nv_bfloat16>(),
                          stream_.handle());
  m_ = m;
}

const __nv_bfloat16* Engine::output(int layer) const {
  return out_.as<__nv_bfloat16>() +
         static_cast<std::size_t>(layer) * static_cast<std::size_t>(capacity_m_) *
             static_cast<std::size_t>(config_.shape.hidden);
}

void Engine::forward() {
  if (m_ == 0) throw Error(ExitCode::probe_error, "Engine::forward before set_input");
  for (int l = 0; l < layers(); ++l) {
    // One readback in the whole step, before layer 0's kernels: it waits only for what is
    // queued ahead (nothing, in a timing loop that drains first), so a ratio of host to GPU
    // time cannot see it.
    if (mutation_active(Mutation::one_readback_in_forward) && l == 0) {
      std::uint16_t word = 0;
      MOE_CUDA_CHECK(cudaMemcpyAsync(&word, x_.data(), sizeof word, cudaMemcpyDeviceToHost, stream_.handle()));
      MOE_CUDA_CHECK(cudaStreamSynchronize(stream_.handle()));
    }
    layer(l).forward(x_.as<__nv_bfloat16>(), const_cast<__nv_bfloat16*>(output(l)), m_);
    // The historic half-stall: a wait after the first half of the layers (one of two).
    if (mutation_active(Mutation::blocking_one_layer) && layers() > 1 && l + 1 == layers() / 2)
      stream_.drain();
  }
  // The historic capture hazard: a barrier at the end of the step, only while capturing.
  if (mutation_active(Mutation::sync_inside_capture) && stream_.capturing()) stream_.drain();
  // The same hazard past the engine's own drain: the CUDA call itself, which invalidates the
  // capture (cudaErrorStreamCaptureUnsupported) instead of being refused by the stream.
  if (mutation_active(Mutation::raw_sync_inside_capture) && stream_.capturing())
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream_.handle()));
}

std::vector<const void*> Engine::scratch_blocks() const {
  std::vector<const void*> out;
  for (const auto& l : layers_) out.push_back(l->scratch().data());
  return out;
}

bool Engine::scratch_moved(const CapturedStep& step) const {
  // No allocation: this runs on every replay, inside the host time the probes measure.
  if (step.scratch.size() != layers_.size()) return true;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    if (step.scratch[l] != layers_[l]->scratch().data()) return true;
  return false;
}

std::optional<std::string> Engine::capture_blocker() const {
  if (m_ == 0) return "no input: call set_input(m) first";
  for (const auto& l : layers_)
    if (auto why = l->capture_blocker(m_)) return why;
  return std::nullopt;
}

void Engine::capture(bool check_first) {
  if (check_first)
    if (auto why = capture_blocker()) throw Error(ExitCode::probe_error, "cannot capture: " + *why);
  auto graph = std::make_unique<CapturedGraph>(stream_, [this] { forward(); });
  // The blocks after the capture: under capture-growth a pool grew inside it.
  graphs_[m_] = CapturedStep{std::move(graph), scratch_blocks()};
}

void Engine::replay() {
  auto it = graphs_.find(m_);
  if (it == graphs_.end())
    throw Error(ExitCode::probe_error, "no graph captured for M=" + std::to_string(m_));
  if (scratch_moved(it->second) &&
      !mutation_active(Mutation::graphs_kept_after_regrow)) {
    // A regrow freed the scratch this graph was captured with (drained first, so no replay
    // is still using it): capture the step again on the blocks the layers hold now.
    graphs_.erase(it);
    capture();
    ++graphs_recaptured_;
    it = graphs_.find(m_);
  }
  // ---- The historic dirty check, live only under Mutation::replay_skips_work ------------
  // The same input buffer and M as the last replay taken to mean the same input: the replay
  // is skipped, so tokens written into that buffer since are never computed.
  if (mutation_active(Mutation::replay_skips_work)) {
    const bool same = last_replay_input_ == x_.data() && last_replay_m_ == m_;
    last_replay_input_ = x_.data();
    last_replay_m_ = m_;
    if (same) return;
  }
  it->second.graph->replay(stream_);
  // Only graphs that write a record need telling apart from finished ones (the telemetry
  // boundary); a disarmed engine's replay costs no event record. A residency transition is
  // refused while any graph exists, replaying or not.
  if (telemetry_epochs_.armed()) {
    if (!replay_done_) replay_done_ = std::make_unique<CudaEvent>();
    replay_done_->record(stream_.handle());
  }
}

BoundaryState Engine::boundary_state() const {
  BoundaryState s;
  s.capturing = stream_.capturing();
  if (!s.capturing && replay_done_) {
    const cudaError_t status = cudaEventQuery(replay_done_->handle());
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: the replay is still running
      s.replay_in_flight = true;
    } else {
      MOE_CUDA_CHECK(status);
    }
  }
  return s;
}

TelemetryIdentity Engine::telemetry_identity(int layer) const {
  return {instance_, layer, device_ordinal_};
}

void Engine::arm_telemetry() {
  if (auto why = telemetry_epochs_.arm_refusal(boundary_state())) throw BoundaryRefused(*why);
  stream_.drain();
  for (int l = 0; l < layers(); ++l) layer(l).arm_telemetry(telemetry_identity(l), 1);
  stream_.drain();
  telemetry_epochs_.arm();
  graphs_.clear();  // captured disarmed: their route kernels take a null record
}

void Engine::reset_telemetry_at_boundary() {
  const BoundaryState state = boundary_state();
  if (!mutation_active(Mutation::telemetry_reset_in_capture)) {
    if (auto why = telemetry_epochs_.boundary_refusal(state, "reset")) throw BoundaryRefused(*why);
  } else if (!telemetry_epochs_.armed()) {
    throw BoundaryRefused("reset refused: telemetry is not armed");
  }
  if (state.capturing) {
    // ---- The refusal removed, live only under Mutation::telemetry_reset_in_capture ---------
    // The reset goes into the graph being captured (a memset node a layer): the host epoch
    // moves now although no window ended, and every replay of that graph zeroes the record.
    telemetry_epochs_.advance();
    for (int l = 0; l < layers(); ++l) layer(l).telemetry()->enqueue_zero(stream_);
    return;
  }
  stream_.drain();
  telemetry_epochs_.advance();
  for (int l = 0; l < layers(); ++l) layer(l).telemetry()->open_window(telemetry_epochs_.epoch(), stream_);
  stream_.drain();
}

void Engine::apply_residency(int l, const ResidencyPlan& plan, ResidencyFaultPoint fault) {
  if (l < 0 || l >= layers())
    throw Error(ExitCode::probe_error, "apply_residency: layer " + std::to_string(l) + " of " + std::to_string(layers()));
  const BoundaryState state = boundary_state();
  if (state.capturing) throw BoundaryRefused("residency transition refused: the stream is capturing a graph");
  if (state.replay_in_flight) throw BoundaryRefused("residency transition refused: a graph replay is in flight");
  if (!graphs_.empty() && !mutation_active(Mutation::residency_under_live_graph))
    throw BoundaryRefused("residency transition refused: " + std::to_string(graphs_.size()) +
                          " captured graph(s) hold layer " + std::to_string(l) +
                          "'s expert pointer tables; drop them first and capture again after");
  stream_.drain();
  layer(l).weights().apply_residency(plan.placement, stream_, fault);
  stream_.drain();
}

std::vector<TelemetryWindow> Engine::telemetry_windows() {
  if (auto why = telemetry_epochs_.boundary_refusal(boundary_state(), "snapshot")) throw BoundaryRefused(*why);
  std::vector<TelemetryWindow> out;
  for (int l = 0; l < layers(); ++l) out.push_back(layer(l).telemetry()->read(stream_));
  return out;
}

std::vector<TelemetryWindow> Engine::telemetry_snapshot() {
  std::vector<TelemetryWindow> out = telemetry_windows();
  for (int l = 0; l < layers(); ++l) {
    const WindowCheck k = validate_window(out[static_cast<std::size_t>(l)], telemetry_identity(l),
                                          telemetry_epochs_.epoch());
    if (!k.usable())
      throw BoundaryRefused("snapshot refused: layer " + std::to_string(l) + " window " +
                            std::string(to_string(k.problem)) + ": " + k.reason);
  }
  return out;
}

std::size_t Engine::weight_bytes() const {
  std::size_t total = 0;
  for (const auto& l : layers_) total += l->weights().total_bytes();
  return total;
}

}  // namespace moe
