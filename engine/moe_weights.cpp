#include "engine/moe_weights.hpp"

#include "common/cuda_check.hpp"
#include "engine/stream.hpp"
#include "kernels/moe/generate.hpp"

namespace moe {

using kernels::TensorKind;
using kernels::WeightFormat;

MoeWeights::MoeWeights(const kernels::MoeDims& dims, std::uint64_t seed, Routing routing,
                       DeviceAllocator& allocator, Stream& stream)
    : dims_(dims), seed_(seed), routing_(routing), allocator_(allocator), resident_(allocator) {
  router_ = allocator_.allocate(kernels::router_bytes(dims_));
  kernels::generate_router(dims_, seed_, router_.as<__nv_bfloat16>(), stream.handle());
  const std::vector<float> bias = routing_bias(routing_, dims_.experts, dims_.top_k);
  if (!bias.empty()) {
    router_bias_ = allocator_.allocate(bias.size() * sizeof(float));
    // Synchronous on purpose: the host vector dies at the end of this scope.
    MOE_CUDA_CHECK(cudaMemcpy(router_bias_.data(), bias.data(), bias.size() * sizeof(float),
                              cudaMemcpyHostToDevice));
  }
  const bool int4 = dims_.format == WeightFormat::int4;
  experts_.resize(static_cast<std::size_t>(dims_.total_experts()));
  for (int e = 0; e < dims_.total_experts(); ++e) {
    ExpertBuffers& b = experts_[static_cast<std::size_t>(e)];
    for (TensorKind kind : {TensorKind::gate_up, TensorKind::down}) {
      DeviceBuffer& w = kind == TensorKind::gate_up ? b.gate_up : b.down;
      DeviceBuffer& s = kind == TensorKind::gate_up ? b.gate_up_scales : b.down_scales;
      w = allocator_.allocate(kernels::expert_weight_bytes(dims_, kind));
      if (int4) s = allocator_.allocate(kernels::expert_scale_bytes(dims_, kind));
      kernels::generate_expert_tensor(dims_, kind, seed_, e, w.data(), s.data(), stream.handle());
    }
  }
}

const kernels::ExpertTable& MoeWeights::resident_table(Stream& stream) {
  return resident_.acquire(*this, stream);
}

std::size_t MoeWeights::expert_bytes() const {
  std::size_t bytes = 0;
  for (TensorKind kind : {TensorKind::gate_up, TensorKind::down})
    bytes += kernels::expert_weight_bytes(dims_, kind) + kernels::expert_scale_bytes(dims_, kind);
  return bytes;
}

std::size_t MoeWeights::router_bytes() const { return kernels::router_bytes(dims_); }

std::size_t MoeWeights::total_bytes() const {
  return router_bytes() + expert_bytes() * static_cast<std::size_t>(dims_.total_experts());
}

}  // namespace moe
