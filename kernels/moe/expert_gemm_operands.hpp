#pragma once
// What a grouped expert GEMM stage over the route's grouping reads and writes: the operands the
// tensor-core tile kernels (wmma and wgmma) take, filled once from a forward's arguments.
#include <cuda_bf16.h>

#include "kernels/moe/forward.hpp"

namespace moe::kernels {

struct ExpertGemmOperands {
  const void* const* weights;  // per expert [rows, K]; gate_up's rows are gate then up
  const void* const* scales;   // int4: per expert bf16 [rows, ceil(K / 128)]
  const __nv_bfloat16* input;  // gate_up: x [m, H] (or x_pairs); down: h [pairs, I]
  int k_len, out_rows, slots;
  int m, pairs, total_experts;  // bounds of the indices read from scratch
  const int* offsets;           // [E + S + 1]: each expert's first pair in the grouped order
  const int* sorted_pairs;      // grouped position -> pair index
  __nv_bfloat16* h_out;         // [pairs, I], grouped order
  float* down_out;              // [pairs, H], grouped order: fp32, or bf16 where down_bf16
  bool down_bf16;               // down_rows_in_bf16: the wgmma tiles' down stores bf16 rows
};

// gate_up's (gate_up true) or down's operands. scale_input (Llama-4): gate_up reads each pair's
// own input row (x_pairs, written by the route), pair index = row, so a pair is its own
// "token": slots 1, m = pairs.
ExpertGemmOperands expert_gemm_operands(const MoeForwardArgs& a, const ScratchLayout& l, bool gate_up);

}  // namespace moe::kernels
