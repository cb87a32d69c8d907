#pragma once
// One MoE layer's experts as a vendor library computes them, without routing: cuBLAS's grouped
// GEMM (cublasGemmGroupedBatchedEx) for gate_up ([rows of e, H] x [H, 2I]), our SiLU-mul, and
// the grouped GEMM again for down ([rows of e, I] x [I, H]). bf16 inputs and outputs, fp32
// compute (CUBLAS_COMPUTE_32F). Experts with the same number of rows form one group, since the
// problems of a group share m, n and k.
#include <cuda_bf16.h>

#include <vector>

#include "kernels/peer/cublas_handle.hpp"

namespace moe::kernels::peer {

// One expert's weights, as the engine stores them for bf16, and how many token rows it gets.
struct ExpertRows {
  const void* gate_up = nullptr;  // bf16 [2I, H] row-major: rows 0..I-1 gate, I..2I-1 up
  const void* down = nullptr;     // bf16 [H, I] row-major
  int rows = 0;                   // at least 1
};

// The activations of one layer's pass: every expert's rows back to back, in the order the
// experts were given (R rows in all).
struct ExpertActivations {
  const __nv_bfloat16* x = nullptr;  // [R, H] each expert's token rows
  __nv_bfloat16* gate_up = nullptr;  // [R, 2I]
  __nv_bfloat16* h = nullptr;        // [R, I]
  __nv_bfloat16* y = nullptr;        // [R, H]
};

class GroupedExpertGemm {
 public:
  GroupedExpertGemm(int hidden, int inter, const std::vector<ExpertRows>& experts,
                    const ExpertActivations& activations);

  int rows() const { return rows_; }
  int groups() const { return static_cast<int>(group_size_.size()); }
  // The pointer arrays the two grouped GEMMs read, which cuBLAS wants in device memory: A, B
  // and C of gate_up, then of down, each one entry per expert in group order. The caller
  // uploads this table and passes its device copy to enqueue().
  const std::vector<void*>& pointer_table() const { return table_; }

  // Enqueues gate_up, SiLU-mul and down on the handle's stream; nothing synchronises.
  void enqueue(const CublasHandle& handle, void* const* device_table) const;

 private:
  // Per group: the host arrays the grouped GEMM takes (one entry a group).
  struct Gemm {
    std::vector<int> m, n, k, lda, ldb, ldc;
  };
  int hidden_, inter_, rows_ = 0;
  ExpertActivations activations_;
  std::vector<void*> table_;
  std::vector<int> group_size_;
  std::vector<cublasOperation_t> transposed_, plain_;
  std::vector<float> alpha_, beta_;
  Gemm gate_up_, down_;
};

}  // namespace moe::kernels::peer
