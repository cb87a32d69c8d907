#include "kernels/peer/grouped_expert_gemm.hpp"

#include <map>

#include "kernels/peer/silu_mul.hpp"

namespace moe::kernels::peer {

// cuBLAS is column-major: a row-major [rows, K] matrix is its K x rows matrix with leading
// dimension K. So out[rows, N] = x[rows, K] W^T with W row-major [N, K] is, for cuBLAS,
// C (N x rows) = op_T(W: K x N) * x (K x rows): m = N, n = rows, k = K, A = W transposed.
GroupedExpertGemm::GroupedExpertGemm(int hidden, int inter, const std::vector<ExpertRows>& experts,
                                     const ExpertActivations& a)
    : hidden_(hidden), inter_(inter), activations_(a) {
  if (hidden < 1 || inter < 1) throw Error(ExitCode::probe_error, "GroupedExpertGemm: empty dimensions");
  // Row offsets in the given order; groups by row count.
  std::map<int, std::vector<std::pair<int, long long>>> by_rows;  // rows -> (expert, first row)
  for (int e = 0; e < static_cast<int>(experts.size()); ++e) {
    if (experts[e].rows < 1 || !experts[e].gate_up || !experts[e].down)
      throw Error(ExitCode::probe_error, "GroupedExpertGemm: expert " + std::to_string(e) +
                                             " has no rows or no weights");
    by_rows[experts[e].rows].push_back({e, rows_});
    rows_ += experts[e].rows;
  }
  const std::size_t p = experts.size();
  table_.assign(6 * p, nullptr);
  std::size_t i = 0;
  auto bf16_at = [](const void* base, long long row, int width) {
    return const_cast<void*>(static_cast<const void*>(static_cast<const __nv_bfloat16*>(base) + row * width));
  };
  for (const auto& [rows, members] : by_rows) {
    group_size_.push_back(static_cast<int>(members.size()));
    for (const auto& [e, first] : members) {
      table_[0 * p + i] = const_cast<void*>(experts[e].gate_up);
      table_[1 * p + i] = bf16_at(a.x, first, hidden);
      table_[2 * p + i] = bf16_at(a.gate_up, first, 2 * inter);
      table_[3 * p + i] = const_cast<void*>(experts[e].down);
      table_[4 * p + i] = bf16_at(a.h, first, inter);
      table_[5 * p + i] = bf16_at(a.y, first, hidden);
      ++i;
    }
    gate_up_.m.push_back(2 * inter), gate_up_.n.push_back(rows), gate_up_.k.push_back(hidden);
    gate_up_.lda.push_back(hidden), gate_up_.ldb.push_back(hidden), gate_up_.ldc.push_back(2 * inter);
    down_.m.push_back(hidden), down_.n.push_back(rows), down_.k.push_back(inter);
    down_.lda.push_back(inter), down_.ldb.push_back(inter), down_.ldc.push_back(hidden);
  }
  const std::size_t g = group_size_.size();
  transposed_.assign(g, CUBLAS_OP_T);
  plain_.assign(g, CUBLAS_OP_N);
  alpha_.assign(g, 1.0f);
  beta_.assign(g, 0.0f);
}

void GroupedExpertGemm::enqueue(const CublasHandle& handle, void* const* table) const {
  if (rows_ == 0) return;
  const CublasLibrary& lib = handle.library();
  const std::size_t p = table_.size() / 6;
  auto in = [&](std::size_t k) { return const_cast<const void* const*>(table + k * p); };
  auto run = [&](const Gemm& gemm, std::size_t first) {
    MOE_CUBLAS_CALL(lib, cublasGemmGroupedBatchedEx, handle.get(), transposed_.data(), plain_.data(),
                    gemm.m.data(), gemm.n.data(), gemm.k.data(), alpha_.data(), in(first), CUDA_R_16BF,
                    gemm.lda.data(), in(first + 1), CUDA_R_16BF, gemm.ldb.data(), beta_.data(),
                    table + (first + 2) * p, CUDA_R_16BF, gemm.ldc.data(), groups(),
                    group_size_.data(), CUBLAS_COMPUTE_32F);
  };
  run(gate_up_, 0);
  silu_mul(activations_.gate_up, rows_, inter_, activations_.h, handle.stream());
  run(down_, 3);
}

}  // namespace moe::kernels::peer
