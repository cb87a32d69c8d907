#include "engine/external/layer_description.hpp"

#include <cstring>

#include "common/errors.hpp"

namespace moe::external {

moebench_layer_desc describe_layer(const kernels::MoeDims& d) {
  moebench_layer_desc out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.hidden = d.hidden;
  out.intermediate = d.inter;
  out.experts = d.experts;
  out.shared_experts = d.shared;
  out.top_k = d.top_k;
  out.scoring = d.scoring == kernels::Scoring::sigmoid ? MOEBENCH_SCORING_SIGMOID : MOEBENCH_SCORING_SOFTMAX;
  out.renormalize = d.renormalize ? 1 : 0;
  switch (d.topk_method) {
    case kernels::TopKMethod::greedy: out.topk_method = MOEBENCH_TOPK_GREEDY; break;
    case kernels::TopKMethod::group_limited_greedy: out.topk_method = MOEBENCH_TOPK_GROUP_LIMITED_GREEDY; break;
    case kernels::TopKMethod::noaux_tc: out.topk_method = MOEBENCH_TOPK_NOAUX_TC; break;
  }
  out.n_group = d.n_group;
  out.topk_group = d.topk_group;
  out.routed_scaling = d.routed_scaling;
  out.shared_gate = d.shared_gate ? 1 : 0;
  out.scale_input = d.scale_input ? 1 : 0;
  out.weight_format = d.format == kernels::WeightFormat::int4 ? MOEBENCH_WEIGHTS_INT4 : MOEBENCH_WEIGHTS_BF16;
  return out;
}

LayerWeightsTables::LayerWeightsTables(const MoeWeights& weights) : weights_(weights) {
  if (weights.dims().format == kernels::WeightFormat::int4 && weights.int4_layout() != kernels::Int4Layout::rows)
    throw Error(ExitCode::probe_error,
                "weights for an engine adapter must be in the int4 row layout, these are in " +
                    std::string(kernels::to_string(weights.int4_layout())));
  if (weights.dims().format == kernels::WeightFormat::bf16 && weights.bf16_layout() != kernels::Bf16Layout::rows)
    throw Error(ExitCode::probe_error,
                "weights for an engine adapter must be in the bf16 row layout, these are in " +
                    std::string(kernels::to_string(weights.bf16_layout())));
  const bool int4 = weights.dims().format == kernels::WeightFormat::int4;
  for (int e = 0; e < weights.dims().total_experts(); ++e) {
    // Table order of MoeWeights::tensor_pointer: gate_up, gate_up_scales, down, down_scales.
    gate_up_.push_back(weights.tensor_pointer(e, 0));
    gate_up_scales_.push_back(int4 ? weights.tensor_pointer(e, 1) : nullptr);
    down_.push_back(weights.tensor_pointer(e, 2));
    down_scales_.push_back(int4 ? weights.tensor_pointer(e, 3) : nullptr);
  }
}

void LayerWeightsTables::fill(moebench_layer_weights& out) const {
  const bool int4 = weights_.dims().format == kernels::WeightFormat::int4;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.router = weights_.router();
  out.router_bias = weights_.router_bias();
  out.selection_bias = weights_.selection_bias();
  out.total_experts = weights_.dims().total_experts();
  out.gate_up = gate_up_.data();
  out.gate_up_scales = int4 ? gate_up_scales_.data() : nullptr;
  out.down = down_.data();
  out.down_scales = int4 ? down_scales_.data() : nullptr;
}

}  // namespace moe::external
