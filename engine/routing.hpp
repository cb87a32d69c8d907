#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace moe {

// How tokens spread over experts. The router is real (x . W_r); a per-expert bias on the logits
// shapes the distribution without touching the weights, the way DeepSeek-V3's correction bias
// does, so every distribution runs the same kernels.
enum class Routing {
  uniform,      // no bias: random router weights spread tokens roughly evenly
  skewed,       // experts 0..k-1 win for every token (all tokens to the same experts)
  cold_expert,  // the last expert never wins
};

std::string_view to_string(Routing r);
// Raises UsageError naming the valid distributions.
Routing routing_from_name(std::string_view name);

// Per-expert logit bias for the distribution; empty for uniform (no bias buffer at all).
std::vector<float> routing_bias(Routing r, int experts, int top_k);

}  // namespace moe
