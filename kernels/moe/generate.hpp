#pragma once
// Device kernels that fill engine-owned buffers with generated tensors (generator.hpp), and
// the host-side functions that derive the same values for the CPU reference.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/moe/moe_types.hpp"

namespace moe::kernels {

// [rows, K] of an expert weight tensor: gate_up is [2I, H] (K = H), down is [H, I] (K = I).
struct TensorShape {
  std::size_t rows = 0;
  int k = 0;
};
TensorShape expert_tensor_shape(const MoeDims& dims, TensorKind kind);

// Bytes of one expert's tensor in the layer's format (packed words for int4) and of its int4
// scales (0 for bf16). Every buffer must be 16-byte aligned (cudaMalloc's are).
std::size_t expert_weight_bytes(const MoeDims& dims, TensorKind kind);
std::size_t expert_scale_bytes(const MoeDims& dims, TensorKind kind);
std::size_t router_bytes(const MoeDims& dims);  // bf16 [router_rows(), H]
std::size_t input_bytes(const MoeDims& dims, int m);  // bf16 [m, H]

// Fills one expert's gate_up or down tensor (kind) in dims.format. For int4, `scales` receives
// bf16 [rows, ceil(K/128)]; for bf16 it must be null. Values depend on (seed, kind, expert),
// not on the layouts, which say where int4 codes and scales sit (`layout`) and where bf16
// values sit (`bf16_layout`); each format ignores the other's.
void generate_expert_tensor(const MoeDims& dims, TensorKind kind, std::uint64_t seed, int expert,
                            void* weights, void* scales, cudaStream_t stream,
                            Int4Layout layout = Int4Layout::rows, Bf16Layout bf16_layout = Bf16Layout::rows);
// Router bf16 [router_rows(), H], uniform [-1,1)/sqrt(H): the E routed rows, then the shared
// gate's row where the layer has one (a router-like row, so the route kernel computes it).
void generate_router(const MoeDims& dims, std::uint64_t seed, __nv_bfloat16* router,
                     cudaStream_t stream);
// Activations bf16 [m, H], uniform [-1, 1).
void generate_input(const MoeDims& dims, int m, std::uint64_t seed, __nv_bfloat16* x,
                    cudaStream_t stream);

// ---- Host derivation (the CPU reference's side of the generator) ----
// One row of an expert tensor as floats (exact values of the stored bf16 / q * scale).
void expert_row_host(const MoeDims& dims, TensorKind kind, std::uint64_t seed, int expert,
                     std::size_t row, float* out /*[K]*/);
// noaux_tc's per-expert correction bias (e_score_correction_bias), fp32 [E]: uniform
// [-1, 1) / 16 (exact floats), about the spread of the sigmoid scores of the generated
// router, so it moves the choice between experts of close scores. Derived on the host and
// uploaded, the same values for the kernels and the reference. Empty without noaux_tc.
std::vector<float> selection_bias_host(const MoeDims& dims, std::uint64_t seed);
// Router row e (H floats; e == E: the shared gate's row) and input row t (H floats).
void router_row_host(const MoeDims& dims, std::uint64_t seed, int e, float* out);
void input_row_host(const MoeDims& dims, std::uint64_t seed, int t, float* out);

}  // namespace moe::kernels
