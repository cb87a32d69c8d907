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
  moebench_error error = empty_error();
  const moebench_status status = adapter_->table().create(&desc, &handle_, &error);
  check_call(*adapter_, "create", status, error);
  if (!handle_)
    throw Error(ExitCode::probe_error, adapter_->label() + ": create returned MOEBENCH_OK and no engine");
}

ExternalEngine::~ExternalEngine() {
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
}

}  // namespace moe::external
