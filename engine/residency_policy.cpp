#include "engine/residency_policy.hpp"

#include <algorithm>
#include <numeric>

namespace moe {

int ResidencyPlan::hot() const {
  return static_cast<int>(std::count(placement.begin(), placement.end(), Placement::device));
}
int ResidencyPlan::cold() const { return static_cast<int>(placement.size()) - hot(); }

ResidencyPlan all_resident(int experts, std::string reason) {
  ResidencyPlan p;
  p.placement.assign(static_cast<std::size_t>(experts), Placement::device);
  p.fallback = true;
  p.reason = std::move(reason);
  return p;
}

ResidencyPlan plan_residency(const TelemetryWindow& w, const WindowCheck& check, std::size_t expert_bytes,
                             const ResidencyPolicy& policy) {
  const int E = w.experts();
  if (!check.usable())
    return all_resident(E, "window " + std::string(to_string(check.problem)) + ": " + check.reason +
                               "; every expert stays resident");
  if (w.empty()) return all_resident(E, "empty window: nothing was routed; every expert stays resident");
  std::vector<int> order(static_cast<std::size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return w.counts[static_cast<std::size_t>(a)] > w.counts[static_cast<std::size_t>(b)];
  });
  ResidencyPlan p;
  p.placement.assign(static_cast<std::size_t>(E), Placement::host);
  std::size_t used = 0;
  int below_share = 0, over_budget = 0;
  for (int e : order) {
    const double share = static_cast<double>(w.counts[static_cast<std::size_t>(e)]) / static_cast<double>(w.total);
    if (w.counts[static_cast<std::size_t>(e)] == 0 || share < policy.hot_share) {
      ++below_share;
      continue;
    }
    if (policy.budget_bytes && used + expert_bytes > policy.budget_bytes) {
      ++over_budget;
      continue;
    }
    used += expert_bytes;
    p.placement[static_cast<std::size_t>(e)] = Placement::device;
  }
  p.reason = std::to_string(p.hot()) + " hot, " + std::to_string(below_share) + " below the share " +
             std::to_string(policy.hot_share) + ", " + std::to_string(over_budget) + " over the budget of " +
             (policy.budget_bytes ? std::to_string(policy.budget_bytes) + " bytes" : std::string("(none)"));
  return p;
}

}  // namespace moe
