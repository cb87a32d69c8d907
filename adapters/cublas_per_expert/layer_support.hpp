#pragma once
// Which layers the cuBLAS adapter computes: bf16 weights, greedy top-k over softmax or sigmoid
// scores (with or without renormalisation, router bias and routed scaling), shared experts
// without a gate. Answered without the device, for check_layer and create alike.
#include <string>

#include "moebench/engine_abi.h"

namespace cublas_adapter {

inline constexpr int kMaxExperts = 4096;  // the route kernel keeps a token's logits in shared memory
inline constexpr int kMaxTopK = 32;

// Empty when supported, else why not, naming the value and what is taken.
inline std::string layer_not_supported(const moebench_layer_desc& d) {
  if (d.struct_size < sizeof(moebench_layer_desc)) return "layer description too small";
  if (d.weight_format != MOEBENCH_WEIGHTS_BF16)
    return "weight format " + std::to_string(d.weight_format) + ": only bf16 (MOEBENCH_WEIGHTS_BF16) is taken";
  if (d.topk_method != MOEBENCH_TOPK_GREEDY)
    return "top-k method " + std::to_string(d.topk_method) + ": only greedy (MOEBENCH_TOPK_GREEDY) is taken";
  if (d.scoring != MOEBENCH_SCORING_SOFTMAX && d.scoring != MOEBENCH_SCORING_SIGMOID)
    return "scoring " + std::to_string(d.scoring) + ": softmax or sigmoid";
  if (d.shared_gate) return "a gated shared expert: only ungated shared experts are taken";
  if (d.scale_input) return "experts run on x * w (scale_input): only weighted outputs are taken";
  if (d.hidden < 1 || d.intermediate < 1 || d.shared_experts < 0)
    return "hidden " + std::to_string(d.hidden) + ", intermediate " + std::to_string(d.intermediate) +
           ", shared experts " + std::to_string(d.shared_experts) + ": must be positive (shared: 0 or more)";
  if (d.experts < 1 || d.experts > kMaxExperts)
    return std::to_string(d.experts) + " experts: 1.." + std::to_string(kMaxExperts) + " are taken";
  if (d.top_k < 1 || d.top_k > d.experts || d.top_k > kMaxTopK)
    return "top_k " + std::to_string(d.top_k) + ": 1..min(experts, " + std::to_string(kMaxTopK) + ")";
  return "";
}

}  // namespace cublas_adapter
