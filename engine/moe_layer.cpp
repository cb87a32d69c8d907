#include "engine/moe_layer.hpp"

#include <new>

#include "engine/fault_injection.hpp"
#include "engine/stream.hpp"

namespace moe {

MoeLayer::MoeLayer(const LayerConfig& config, DeviceAllocator& allocator, Stream& stream,
                   void* weights_storage)
    : config_(config), stream_(stream), allocator_(allocator), scratch_(allocator) {
  const int sm = kernels::current_device_sm();
  const kernels::WeightLayouts layouts{kernels::int4_layout(config_.options, config_.dims, sm),
                                       kernels::bf16_layout(config_.options, config_.dims, sm)};
  if (config_.options.preload_kernels) kernels::preload_forward_kernels(config_.dims, config_.options, layouts);
  void* storage = weights_storage;
  if (!storage) storage = owned_storage_ = ::operator new(sizeof(MoeWeights));
  try {
    weights_ = new (storage) MoeWeights(config_.dims, config_.seed, config_.routing, allocator, stream_, layouts.int4,
                                        layouts.bf16);
  } catch (...) {
    ::operator delete(owned_storage_);
    throw;
  }
}

MoeLayer::~MoeLayer() {
  // Enqueued forwards may still read the weights and the scratch: wait before freeing.
  if (!mutation_active(Mutation::drop_without_drain)) {
    try {
      stream_.drain();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moebench: drain in ~MoeLayer failed: %s\n", e.what());
    }
  }
  weights_->~MoeWeights();
  ::operator delete(owned_storage_);
}

void MoeLayer::forward(const __nv_bfloat16* x, __nv_bfloat16* out, int m) {
  kernels::MoeForwardArgs args;
  args.dims = config_.dims;
  args.m = m;
  args.x = x;
  args.out = out;
  args.router = static_cast<const __nv_bfloat16*>(weights_->router());
  args.router_bias = weights_->router_bias();
  args.selection_bias = weights_->selection_bias();
  args.scratch_bytes = kernels::forward_scratch_bytes(config_.dims, m);
  args.scratch = scratch_.ensure(args.scratch_bytes, stream_);
  args.scratch_bytes = scratch_.capacity();
  if (telemetry_) {
    args.telemetry = telemetry_->view();
    args.telemetry.inject = telemetry_inject_id_.has_value();
    args.telemetry.inject_id = telemetry_inject_id_.value_or(0);
    args.telemetry.counts_wrap = mutation_active(Mutation::telemetry_count_wraps);  // the unguarded add
    if (mutation_active(Mutation::telemetry_reset_per_replay)) telemetry_->enqueue_zero(stream_);
  }
  args.experts = weights_->resident_table(stream_);
  args.path = config_.path;
  args.options = config_.options;
  kernels::enqueue_moe_forward(args, stream_.handle());
  last_scratch_ = args.scratch;
  last_experts_ = args.experts;
  ++forwards_;
  if (mutation_active(Mutation::blocking_forward)) stream_.drain();  // the historic stall
}

void MoeLayer::arm_telemetry(const TelemetryIdentity& identity, std::uint64_t epoch) {
  telemetry_ = std::make_unique<RouteTelemetryRecord>(allocator_, identity,
                                                      config_.dims.experts, epoch, stream_);
}

std::optional<std::string> MoeLayer::capture_blocker(int m) const {
  if (!weights_->resident().built())
    return "not warmed up: run one eager forward first (the resident tables are built lazily)";
  const std::size_t need = kernels::forward_scratch_bytes(config_.dims, m);
  if (scratch_.would_grow(need))
    return "scratch would grow during capture (has " + std::to_string(scratch_.capacity()) +
           " bytes, M=" + std::to_string(m) + " needs " + std::to_string(need) +
           "): run M=" + std::to_string(m) + " eagerly first";
  return std::nullopt;
}

kernels::ExpertGemmKernels MoeLayer::expert_gemm_kernels(int m, int sm) const {
  const bool decode_path = kernels::takes_decode_path(config_.path, config_.options, config_.dims, m, sm);
  return kernels::expert_gemm_kernels(config_.options, config_.dims, {weights_->int4_layout(), weights_->bf16_layout()},
                                      m, sm, decode_path);
}

}  // namespace moe
