#include "engine/routing.hpp"

#include "common/errors.hpp"

namespace moe {

std::string_view to_string(Routing r) {
  switch (r) {
    case Routing::uniform: return "uniform";
    case Routing::skewed: return "skewed";
    case Routing::cold_expert: return "cold-expert";
  }
  return "?";
}

Routing routing_from_name(std::string_view name) {
  for (Routing r : {Routing::uniform, Routing::skewed, Routing::cold_expert})
    if (to_string(r) == name) return r;
  throw UsageError("unknown routing '" + std::string(name) +
                   "'; valid: uniform, skewed, cold-expert");
}

std::vector<float> routing_bias(Routing r, int experts, int top_k) {
  if (r == Routing::uniform) return {};
  std::vector<float> bias(static_cast<std::size_t>(experts), 0.f);
  if (r == Routing::skewed) {
    // Logits are O(1); +20 puts experts 0..k-1 first for every token, in a fixed order
    // (decreasing bias), so no near-ties between the chosen ones.
    for (int e = 0; e < top_k && e < experts; ++e) bias[e] = 20.f + static_cast<float>(top_k - e);
  } else {
    bias[experts - 1] = -1e4f;  // far below any real logit, finite so softmax stays defined
  }
  return bias;
}

}  // namespace moe
