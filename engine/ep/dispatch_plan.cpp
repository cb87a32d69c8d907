#include "engine/ep/dispatch_plan.hpp"

namespace moe::ep {

DispatchPlan plan_dispatch(const ExpertMap& map, int source, int m, int top_k,
                           const std::vector<int>& ids, int capacity) {
  if (static_cast<int>(ids.size()) != m * top_k)
    throw UsageError("dispatch plan: " + std::to_string(ids.size()) + " expert ids for " +
                     std::to_string(m) + " tokens of top-" + std::to_string(top_k));
  const int P = map.ranks();
  DispatchPlan plan;
  plan.ranks = P;
  plan.top_k = top_k;
  plan.capacity = capacity;
  plan.counts.assign(P, 0);
  std::vector<std::vector<int>> rows(P);          // tokens per destination
  std::vector<std::vector<int>> slot_expert(P);   // their slots
  for (int t = 0; t < m; ++t) {
    for (int d = 0; d < P; ++d) {
      bool any = false;
      for (int s = 0; s < top_k; ++s) {
        const int e = ids[t * top_k + s];
        if (e < 0 || e >= map.experts())
          throw UsageError("dispatch plan: token " + std::to_string(t) + " routed to expert " +
                           std::to_string(e) + ", outside 0.." +
                           std::to_string(map.experts() - 1));
        any = any || map.owner(e) == d;
      }
      if (!any) continue;
      rows[d].push_back(t);
      for (int s = 0; s < top_k; ++s) {
        const int e = ids[t * top_k + s];
        slot_expert[d].push_back(map.owner(e) == d ? map.local_index(e) : -1);
      }
    }
  }
  plan.offsets.assign(P + 1, 0);
  for (int d = 0; d < P; ++d) {
    plan.counts[d] = static_cast<int>(rows[d].size());
    if (plan.counts[d] > capacity)
      throw CapacityOverflow("dispatch: rank " + std::to_string(source) + " would send " +
                             std::to_string(plan.counts[d]) + " rows to rank " +
                             std::to_string(d) + ", over the capacity of " +
                             std::to_string(capacity) +
                             " rows per destination (raise the capacity to the tokens per "
                             "rank, or send fewer tokens)");
    plan.offsets[d + 1] = plan.offsets[d] + plan.counts[d];
    plan.tokens.insert(plan.tokens.end(), rows[d].begin(), rows[d].end());
    plan.slot_expert.insert(plan.slot_expert.end(), slot_expert[d].begin(), slot_expert[d].end());
  }
  return plan;
}

}  // namespace moe::ep
