#pragma once
// The arithmetic of one MoE layer's forward: the router's logits and every (token, expert)
// pair's gate_up and down, two FLOPs a multiply-add. With the read ceiling's bytes it gives
// a case's roofline bound, so one column reads right from decode (bytes) to prefill (FLOPs).
#include <algorithm>

#include "kernels/moe/moe_types.hpp"

namespace moe {

// FLOPs of one layer for m tokens: router 2 m E H; each of the m (top_k + shared) pairs 2 H 2I
// (gate_up) + 2 I H (down). Combine and SwiGLU are O(m H) and left out.
constexpr double layer_flops(const kernels::MoeDims& d, int m) {
  const double pairs = static_cast<double>(m) * (d.top_k + d.shared);
  const double router = 2.0 * m * d.experts * d.hidden;
  return router + pairs * 2.0 * (2.0 * d.inter * d.hidden + static_cast<double>(d.inter) * d.hidden);
}

// The time no kernel can beat: the bytes at the read ceiling or the FLOPs at the compute
// ceiling, whichever is longer (seconds).
constexpr double roofline_seconds(double bytes, double read_gbps, double flops, double compute_tflops) {
  return std::max(bytes / (read_gbps * 1e9), flops / (compute_tflops * 1e12));
}

}  // namespace moe
