#pragma once
// Plain CPU reference of the MoE layer, in float64, sharing the generator with the GPU so it
// derives exactly the weights the kernels read (and only those of the experts it touches).
// Where the GPU stores bf16 (the SwiGLU output h) the reference rounds the same way, so the
// comparison bounds stay tight.
#include <cstdint>
#include <vector>

#include "kernels/moe/moe_types.hpp"

namespace moe::kernels::ref {

// Logits [m, E] in float64 of activations x [m, H] (float copies of the bf16 values) against
// the generated router, plus bias[e] when bias is non-null.
std::vector<double> router_logits(const MoeDims& dims, std::uint64_t weight_seed,
                                  const std::vector<float>& x, int m, const float* bias);

// Top-k of one token's logits (value descending, index ascending), then its weights: softmax
// over all E (or sigmoid per expert), renormalised over the k when dims.renormalize.
void route_token(const MoeDims& dims, const double* logits, int* ids, double* weights);
// The weights the layer gives to a given choice of experts (to follow another routing).
void weights_for_ids(const MoeDims& dims, const double* logits, const int* ids, double* weights);
// Gap between the k-th and (k+1)-th largest logit (infinity when k == E): a routing decision
// closer than fp32 accumulation error to a tie may legitimately differ on the GPU.
double topk_margin(const MoeDims& dims, const double* logits);

// Grouping of (token, slot) pairs by expert, as the GPU does it: slots 0..k-1 routed
// (topk_ids [m, k]), k..k+S-1 the shared experts E..E+S-1; pair index = token * slots + slot;
// within an expert pairs keep pair order.
struct Grouping {
  std::vector<int> counts;         // [E + S]
  std::vector<int> offsets;        // [E + S + 1]
  std::vector<int> active;         // experts with pairs, ascending
  std::vector<int> sorted_pairs;   // [pairs]
  std::vector<int> pair_position;  // [pairs]
};
Grouping group_pairs(const MoeDims& dims, int m, const std::vector<int>& topk_ids);

// One expert's gate/up + SwiGLU for `rows` input rows x [rows, H]:
// h[r][j] = bf16(silu(g) * u) with g, u accumulated in float64. h is [rows, I].
void expert_gate_up(const MoeDims& dims, std::uint64_t weight_seed, int expert, const float* x,
                    int rows, float* h);
// One expert's down projection: y[r][n] = sum_j h[r][j] * W_down[n][j], y is [rows, H].
void expert_down(const MoeDims& dims, std::uint64_t weight_seed, int expert, const float* h,
                 int rows, double* y);

// The whole layer for n tokens with given routing (ids [n, k], weights [n, k]); x is [n, H].
// Returns out [n, H] in float64 (not rounded). Experts run in parallel on `threads` threads.
std::vector<double> moe_layer(const MoeDims& dims, std::uint64_t weight_seed,
                              const std::vector<float>& x, int n, const std::vector<int>& ids,
                              const std::vector<double>& weights, int threads = 0);

// Combine of per-slot outputs y [n, k+S, H] with weights [n, k] (shared slots weight 1), in
// float64.
std::vector<double> combine(const MoeDims& dims, int n, const std::vector<double>& y,
                            const std::vector<double>& weights);

}  // namespace moe::kernels::ref
