#include "engine/external/external_engine.hpp"

#include <cstdio>
#include <utility>

#include "common/cuda_check.hpp"
#include "engine/external/adapter_call.hpp"
#include "kernels/moe/generate.hpp"

namespace moe::external {

ExternalEngine::ExternalEngine(std::shared_ptr<const AdapterLibrary> adapter, const EngineConfig& config,
                               int max_tokens, DeviceAllocator& allocator, moebench_layer_weights* descriptors)
    : adapter_(std::move(adapter)), config_(config), max_tokens_(max_tokens) {
  if (config_.layers < 1 || max_tokens_ < 1)
    throw Error(ExitCode::probe_error, "an external engine needs at least one layer and one token, got " +
                                           std::to_string(config_.layers) + " layers and " +
                                           std::to_string(max_tokens_) + " tokens");
  try {
    build(allocator, descriptors);
  } catch (...) {
    // Generation may still run on the stream: it must finish before the weights are freed.
    try {
      stream_.drain();
    } catch (const std::exception&) {
    }
    throw;
  }
}

void ExternalEngine::build(DeviceAllocator& allocator, moebench_layer_weights* descriptors) {
  const kernels::MoeDims dims = config_.shape.dims(config_.format);
  for (int l = 0; l < config_.layers; ++l)
    weights_.push_back(std::make_unique<MoeWeights>(dims, layer_seed(config_.seed, l), config_.routing, allocator,
                                                    stream_, kernels::Int4Layout::rows));
  if (!descriptors) {
    own_descriptors_.resize(weights_.size());
    descriptors = own_descriptors_.data();
  }
  descriptors_ = descriptors;
  std::vector<std::unique_ptr<LayerWeightsTables>> tables;  // alive during create only
  std::vector<const moebench_layer_weights*> per_layer;
  for (std::size_t l = 0; l < weights_.size(); ++l) {
    tables.push_back(std::make_unique<LayerWeightsTables>(*weights_[l]));
    tables.back()->fill(descriptors_[l]);
    per_layer.push_back(&descriptors_[l]);
  }
  const std::size_t row = static_cast<std::size_t>(dims.hidden) * sizeof(__nv_bfloat16);
  x_ = allocator.allocate(row * static_cast<std::size_t>(max_tokens_));
  out_ = allocator.allocate(row * static_cast<std::size_t>(max_tokens_) * weights_.size());
  // The weights are generated on the stream: the adapter may read them from any stream.
  stream_.drain();

  const moebench_layer_desc layer = describe_layer(dims);
  moebench_engine_desc desc{};
  desc.struct_size = sizeof desc;
  MOE_CUDA_CHECK(cudaGetDevice(&desc.device));
  desc.layers = config_.layers;
  desc.max_tokens = max_tokens_;
  desc.layer = &layer;
  desc.weights = per_layer.data();
  desc.stream = stream_.handle();
  if (adapter_->has(MOEBENCH_CAP_DEVICE_ALLOCATOR)) {
    lent_ = std::make_unique<LentDeviceMemory>(allocator);
    desc.allocator = lent_->table();
  }
  moebench_error error = empty_error();
  const moebench_status status = adapter_->table().create(&desc, &handle_, &error);
  check_call(*adapter_, "create", status, error);
  if (!handle_)
    throw Error(ExitCode::probe_error, adapter_->label() + ": create returned MOEBENCH_OK and no engine");
}

ExternalEngine::~ExternalEngine() {
  // The graph (a member) goes after the drain below: never destroyed under a running replay.
  try {
    destroy();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: %s\n", e.what());
  }
  try {
    stream_.drain();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: drain in ~ExternalEngine failed: %s\n", e.what());
  }
}

void ExternalEngine::destroy() {
  if (!handle_) return;
  moebench_engine* handle = std::exchange(handle_, nullptr);
  moebench_error error = empty_error();
  check_call(*adapter_, "destroy", adapter_->table().destroy(handle, &error), error);
}

void ExternalEngine::set_input(int m, std::uint64_t seed) {
  if (m < 1 || m > max_tokens_)
    throw Error(ExitCode::probe_error, "external engine input of " + std::to_string(m) +
                                           " tokens; it was built for 1.." + std::to_string(max_tokens_));
  kernels::generate_input(config_.shape.dims(config_.format), m, seed, x_.as<__nv_bfloat16>(), stream_.handle());
  m_ = m;
}

const __nv_bfloat16* ExternalEngine::output(int layer) const {
  return out_.as<__nv_bfloat16>() + static_cast<std::size_t>(layer) * static_cast<std::size_t>(max_tokens_) *
                                        static_cast<std::size_t>(config_.shape.hidden);
}

void ExternalEngine::forward() {
  if (m_ == 0) throw Error(ExitCode::probe_error, "ExternalEngine::forward before set_input");
  if (!handle_) throw Error(ExitCode::probe_error, "ExternalEngine::forward after destroy");
  std::vector<void*> outputs;
  for (int l = 0; l < layers(); ++l) outputs.push_back(const_cast<__nv_bfloat16*>(output(l)));
  moebench_forward_args args{};
  args.struct_size = sizeof args;
  args.tokens = m_;
  args.input = x_.data();
  args.outputs = outputs.data();
  args.stream = stream_.handle();
  moebench_error error = empty_error();
  check_call(*adapter_, "forward", adapter_->table().forward(handle_, &args, &error), error);
  if (!stream_.capturing()) eager_ms_.insert(m_);
}

std::string ExternalEngine::capture_blocker() const {
  if (!adapter_->has(MOEBENCH_CAP_CAPTURE_SAFE_FORWARD))
    return adapter_->label() + " does not declare capture-safe-forward (MOEBENCH_CAP_CAPTURE_SAFE_FORWARD)";
  if (m_ == 0) return "no input set";
  if (!eager_ms_.contains(m_))
    return "no eager forward at M=" + std::to_string(m_) + " yet (the ABI allows a capture only after one)";
  return "";
}

void ExternalEngine::capture() {
  if (const std::string why = capture_blocker(); !why.empty())
    throw Error(ExitCode::probe_error, "capture refused: " + why);
  graph_.reset();
  graph_ = std::make_unique<CapturedGraph>(stream_, [&] { forward(); });
}

void ExternalEngine::replay() {
  if (!graph_) throw Error(ExitCode::probe_error, "ExternalEngine::replay with no graph captured");
  graph_->replay(stream_);
}

void ExternalEngine::check_route_counts(const char* function) const {
  if (!adapter_->has(MOEBENCH_CAP_ROUTE_COUNTS))
    throw Error(ExitCode::probe_error, std::string(function) + ": " + adapter_->label() +
                                           " does not declare route-counts (MOEBENCH_CAP_ROUTE_COUNTS)");
  if (!handle_) throw Error(ExitCode::probe_error, std::string(function) + " after destroy");
}

ExternalEngine::RouteCounts ExternalEngine::read_route_counts(int layer) {
  check_route_counts("read_route_counts");
  if (layer < 0 || layer >= layers())
    throw Error(ExitCode::probe_error, "read_route_counts of layer " + std::to_string(layer) + "; valid: 0.." +
                                           std::to_string(layers() - 1));
  RouteCounts out;
  out.counts.assign(static_cast<std::size_t>(config_.shape.experts), 0);
  moebench_route_counts counts{};
  counts.struct_size = sizeof counts;
  counts.layer = layer;
  counts.experts = config_.shape.experts;
  counts.counts = out.counts.data();
  moebench_error error = empty_error();
  check_call(*adapter_, "read_route_counts",
             adapter_->table().read_route_counts(handle_, &counts, stream_.handle(), &error), error);
  out.window = counts.window;
  out.flags = counts.flags;
  return out;
}

void ExternalEngine::reset_route_counts() {
  if (const std::string failure = try_reset_route_counts(); !failure.empty())
    throw Error(ExitCode::probe_error, failure);
}

std::string ExternalEngine::try_reset_route_counts() {
  check_route_counts("reset_route_counts");
  moebench_error error = empty_error();
  const moebench_status status = adapter_->table().reset_route_counts(handle_, stream_.handle(), &error);
  return status == MOEBENCH_OK ? "" : describe_failure(*adapter_, "reset_route_counts", status, error);
}

}  // namespace moe::external
