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

// A token's routing as the model computes it (dims' routing fields; docs/configs.md):
//   scores  = softmax over all E logits, or sigmoid per expert;
//   choice  = scores + selection_bias[e] (noaux_tc; selection_bias [E] then must be given);
//   groups  (grouped methods): E / n_group experts a group, scored by the sum of its two best
//             choices (noaux_tc) or its best (group_limited_greedy); the topk_group best kept
//             and the other groups' experts never chosen;
//   ids     = top-k of the choices (value descending, index ascending; groups the same way);
//   weights = the UNBIASED scores of the ids, renormalised over the k when dims.renormalize,
//             then times dims.routed_scaling.
// With greedy and no bias the choice is the logits' order (softmax and sigmoid are monotone).
void route_token(const MoeDims& dims, const double* logits, int* ids, double* weights,
                 const float* selection_bias = nullptr);
// The weights the layer gives to a given choice of experts (to follow another routing).
void weights_for_ids(const MoeDims& dims, const double* logits, const int* ids, double* weights);
// How close the token's routing is to a tie (infinity when nothing is left out): for greedy,
// the gap between the k-th and (k+1)-th largest logit; for grouped methods, the smaller of the
// gap at the group cut (topk_group-th vs next group score) and at the expert cut among the kept
// groups, in choice units. A decision closer than fp32 error to a tie may legitimately differ on
// the GPU.
double topk_margin(const MoeDims& dims, const double* logits, const float* selection_bias = nullptr);

// Qwen2-MoE's shared-expert gate per token, sigmoid(x . w_gate) with w_gate router row E, in
// float64; x is [m, H]. Empty when dims.shared_gate is off.
std::vector<double> shared_gate(const MoeDims& dims, std::uint64_t weight_seed,
                                const std::vector<float>& x, int m);

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
// With dims.scale_input (Llama-4) a routed expert's input rows are bf16(x * w) and its output
// is added with weight 1; with dims.shared_gate the shared slots are weighted by shared_gate().
std::vector<double> moe_layer(const MoeDims& dims, std::uint64_t weight_seed,
                              const std::vector<float>& x, int n, const std::vector<int>& ids,
                              const std::vector<double>& weights, int threads = 0);

// Combine of per-slot outputs y [n, k+S, H] with weights [n, k] (routed slots weight 1 with
// dims.scale_input), shared slots weighted by gate [n] (null: 1), in float64.
std::vector<double> combine(const MoeDims& dims, int n, const std::vector<double>& y,
                            const std::vector<double>& weights, const double* gate = nullptr);

// The routed expert's input row under dims.scale_input: bf16(x * w) per element, as the GPU
// rounds it (w the fp32 weight); x and out are H floats.
void scaled_input_row(const MoeDims& dims, const float* x, float w, float* out);

}  // namespace moe::kernels::ref
