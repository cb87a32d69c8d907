#include "kernels/moe/expert_gemm_operands.hpp"

namespace moe::kernels {

ExpertGemmOperands expert_gemm_operands(const MoeForwardArgs& a, const ScratchLayout& l, bool gate_up) {
  const MoeDims& d = a.dims;
  void* s = a.scratch;
  const bool pair_rows = gate_up && d.scale_input;
  ExpertGemmOperands p{};
  p.weights = gate_up ? a.experts.gate_up : a.experts.down;
  p.scales = gate_up ? a.experts.gate_up_scales : a.experts.down_scales;
  p.input = pair_rows ? l.at<__nv_bfloat16>(s, l.x_pairs) : gate_up ? a.x : l.at<__nv_bfloat16>(s, l.h);
  p.k_len = gate_up ? d.hidden : d.inter;
  p.out_rows = gate_up ? d.inter : d.hidden;
  p.slots = pair_rows ? 1 : l.slots;
  p.m = pair_rows ? l.pairs : a.m;
  p.pairs = l.pairs;
  p.total_experts = d.total_experts();
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.h_out = l.at<__nv_bfloat16>(s, l.h);
  p.down_out = l.at<float>(s, l.down_out);
  p.down_bf16 = false;  // the wgmma tiles' down sets it (down_rows_in_bf16)
  return p;
}

}  // namespace moe::kernels
