#pragma once
// The SiLU-mul between the vendor peer's two GEMMs: h[r][j] = bf16(silu(g) * u) of the gate_up
// output [rows, 2I] (g = column j, u = column I + j), as the engine's fused epilogue computes it.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace moe::kernels::peer {

void silu_mul(const __nv_bfloat16* gate_up, std::int64_t rows, int inter, __nv_bfloat16* h,
              cudaStream_t stream);

// Bytes it moves: reads 2I and writes I bf16 per row.
inline double silu_mul_bytes(std::int64_t rows, int inter) { return 6.0 * rows * inter; }

}  // namespace moe::kernels::peer
