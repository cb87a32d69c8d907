#pragma once
// The small kernels around the cuBLAS GEMMs of the per-expert adapter. Routing stays on the
// device: the route kernel picks each token's experts and marks them, the plan kernel turns the
// marks into the batched GEMMs' pointer arrays, so the host never reads the routing back and a
// step is capturable. Layouts are cuBLAS's column-major: a GEMM result C [rows, M] holds token
// t's row at C + t * rows.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cublas_adapter {

struct RouteParams {
  const __nv_bfloat16* x = nullptr;       // [M, H]
  const __nv_bfloat16* router = nullptr;  // [E, H]
  const float* router_bias = nullptr;     // [E] or null
  int tokens = 0, hidden = 0, experts = 0, top_k = 0;
  bool softmax = true;                    // else sigmoid
  bool renormalize = false;
  float routed_scaling = 1.0f;
  int* ids = nullptr;                     // [M, k] out
  float* weights = nullptr;               // [M, k] out
  std::uint32_t* routed = nullptr;        // [ceil(E / 32)] bitmap, zeroed before, OR-ed in
  unsigned long long* counts = nullptr;   // [E] route counts, accumulated (never reset here)
};
// Routing of every token: logits in fp32, top-k by value then lower index, the weights.
void enqueue_route(const RouteParams& p, cudaStream_t stream);

struct PlanParams {
  const std::uint32_t* routed = nullptr;      // the route kernel's bitmap
  const void* const* gate_up = nullptr;       // [E + S] the layer's experts (device table)
  const void* const* down = nullptr;
  int experts = 0, shared = 0;
  int routed_entries = 0;                     // min(E, M * k): batch entries for routed experts
  const void** gate_up_batch = nullptr;       // [routed_entries + S] out: each entry's weights
  const void** down_batch = nullptr;
  int* entry_of_expert = nullptr;             // [E + S] out: its batch entry, or -1
};
// The routed experts, ascending, take the first entries; an entry left over repeats the first
// routed expert (its weights already in L2, its result never read); shared experts come last.
void enqueue_plan(const PlanParams& p, cudaStream_t stream);

// h [entry][t][i] = bf16(silu(gate) * up) of gate_up [entry][t][2I] (fp32), for `entries`
// entries of `stride_gate_up` and `stride_h` elements.
void enqueue_swiglu(const float* gate_up, __nv_bfloat16* h, int entries, int tokens, int intermediate,
                    std::size_t stride_gate_up, std::size_t stride_h, cudaStream_t stream);

struct CombineParams {
  const float* down_out = nullptr;  // [entry][t][H] fp32, entries `stride` elements apart
  std::size_t stride = 0;
  const int* ids = nullptr;
  const float* weights = nullptr;
  const int* entry_of_expert = nullptr;
  int tokens = 0, hidden = 0, top_k = 0, shared = 0, routed_entries = 0;
  __nv_bfloat16* out = nullptr;     // [M, H]
};
// out = sum over slots of w * y, then the shared experts' y, in that order (same bits every run).
void enqueue_combine(const CombineParams& p, cudaStream_t stream);

}  // namespace cublas_adapter
