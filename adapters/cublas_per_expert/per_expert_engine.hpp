#pragma once
// An engine of L MoE layers computed as one cuBLAS GEMM per expert: for each layer, the route
// kernel picks and marks the experts, the plan kernel gives each routed expert a batch entry,
// one batched GEMM computes every entry's gate_up over the M tokens, a kernel applies SwiGLU, a
// second batched GEMM the down projection, and the combine kernel weighs each token's experts.
// An expert's GEMM runs over all M tokens (the host never learns which tokens an expert got,
// so M is the only row count it can give cuBLAS): the rows of tokens not routed to it are
// computed and never read. Everything forward needs is allocated at create (the workspace
// cuBLAS is given included), so forward enqueues only and may be captured into a graph.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <set>
#include <vector>

#include "adapters/cublas_per_expert/device_memory.hpp"
#include "moebench/engine_abi.h"

namespace cublas_adapter {

class PerExpertEngine {
 public:
  // Raises CallFailed (or std::invalid_argument naming the bad value) when it cannot be built.
  explicit PerExpertEngine(const moebench_engine_desc& desc);

  void forward(const moebench_forward_args& args);
  // Route counts (MOEBENCH_CAP_ROUTE_COUNTS).
  void read_route_counts(moebench_route_counts& counts, cudaStream_t stream) const;
  // False (nothing done) while `stream` is being captured: a reset inside a graph would run on
  // every replay.
  bool reset_route_counts(cudaStream_t stream);
  // Every stream forward was given, waited for: destroy frees nothing their work still reads.
  void wait_for_forwards() const;

 private:
  struct Layer {
    const void* router = nullptr;
    const float* router_bias = nullptr;
    DeviceMemory gate_up_table, down_table;  // [E + S] device pointers: this layer's experts
  };
  int routed_entries(int tokens) const;

  int hidden_ = 0, inter_ = 0, experts_ = 0, shared_ = 0, top_k_ = 0, max_tokens_ = 0;
  bool softmax_ = true, renormalize_ = false;
  float routed_scaling_ = 1.0f;
  std::vector<Layer> layers_;
  CublasHandle cublas_;
  DeviceMemory workspace_;                 // cuBLAS's, set after every cublasSetStream
  DeviceMemory x_;                         // [max_tokens, H]: the input, copied in by each step
  DeviceMemory ids_, weights_, routed_, entry_of_expert_;
  DeviceMemory gate_up_batch_, down_batch_;  // the plan kernel's pointer arrays
  DeviceMemory x_batch_, gate_up_out_batch_, h_batch_, down_out_batch_;  // fixed pointer arrays
  DeviceMemory gate_up_out_, h_, down_out_;  // per entry: [M, 2I] fp32, [M, I] bf16, [M, H] fp32
  DeviceMemory counts_;                    // [L, E] uint64 route counts
  std::uint64_t window_ = 1;
  std::set<cudaStream_t> streams_;
};

}  // namespace cublas_adapter
