#pragma once
// A layer as the ABI gives it, in moebench's kernels' terms: its dimensions from the
// description, and the per-expert pointer tables (the resident state its kernels read) uploaded
// from the weights' pointers.
#include <cstddef>
#include <vector>

#include "adapters/moebench_engine/abi_status.hpp"
#include "engine/device_allocator.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe::adapter {

// The description's dimensions, or false with the error written (a format, scoring or method
// the kernels do not compute, or a description too small for this header).
inline bool read_layer(const moebench_layer_desc& d, kernels::MoeDims& dims, moebench_error* error) {
  if (d.struct_size < sizeof(moebench_layer_desc)) {
    fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "layer description of %u bytes, ABI 1.0's is %zu", d.struct_size,
         sizeof(moebench_layer_desc));
    return false;
  }
  if (d.weight_format != MOEBENCH_WEIGHTS_BF16 && d.weight_format != MOEBENCH_WEIGHTS_INT4) {
    fail(error, MOEBENCH_ERROR_UNSUPPORTED, "weight format %d (this adapter takes bf16 and int4)", d.weight_format);
    return false;
  }
  if (d.topk_method < MOEBENCH_TOPK_GREEDY || d.topk_method > MOEBENCH_TOPK_NOAUX_TC ||
      (d.scoring != MOEBENCH_SCORING_SOFTMAX && d.scoring != MOEBENCH_SCORING_SIGMOID)) {
    fail(error, MOEBENCH_ERROR_UNSUPPORTED, "top-k method %d or scoring %d", d.topk_method, d.scoring);
    return false;
  }
  dims.hidden = d.hidden;
  dims.inter = d.intermediate;
  dims.experts = d.experts;
  dims.shared = d.shared_experts;
  dims.top_k = d.top_k;
  dims.scoring = d.scoring == MOEBENCH_SCORING_SIGMOID ? kernels::Scoring::sigmoid : kernels::Scoring::softmax;
  dims.renormalize = d.renormalize != 0;
  dims.format = d.weight_format == MOEBENCH_WEIGHTS_INT4 ? kernels::WeightFormat::int4 : kernels::WeightFormat::bf16;
  dims.topk_method = static_cast<kernels::TopKMethod>(d.topk_method);
  dims.n_group = d.n_group;
  dims.topk_group = d.topk_group;
  dims.routed_scaling = d.routed_scaling;
  dims.shared_gate = d.shared_gate != 0;
  dims.scale_input = d.scale_input != 0;
  return true;
}

// The four per-expert pointer arrays of `weights` (gate_up, gate_up_scales, down, down_scales;
// E + S entries each) uploaded into one device buffer from `allocator`, and the table over it.
struct PointerTables {
  DeviceBuffer device;
  kernels::ExpertTable table;
};

inline PointerTables upload_pointer_tables(const moebench_layer_weights& w, DeviceAllocator& allocator) {
  const auto experts = static_cast<std::size_t>(w.total_experts);
  std::vector<const void*> host(4 * experts, nullptr);
  for (std::size_t e = 0; e < experts; ++e) {
    host[e] = w.gate_up[e];
    host[experts + e] = w.gate_up_scales ? w.gate_up_scales[e] : nullptr;
    host[2 * experts + e] = w.down[e];
    host[3 * experts + e] = w.down_scales ? w.down_scales[e] : nullptr;
  }
  PointerTables t;
  t.device = allocator.allocate(host.size() * sizeof(void*));
  MOE_CUDA_CHECK(cudaMemcpy(t.device.data(), host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice));
  const auto* base = t.device.as<const void*>();
  t.table = {base, base + experts, base + 2 * experts, base + 3 * experts, kernels::Int4Layout::rows};
  return t;
}

}  // namespace moe::adapter
