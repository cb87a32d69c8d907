#include "engine/ep/expert_map.hpp"

#include "common/errors.hpp"
#include "kernels/moe/generator.hpp"

namespace moe::ep {

ExpertMap ExpertMap::contiguous(int experts, int ranks) {
  if (experts < 1) throw UsageError("expert map: the layer has no routed experts to shard");
  if (ranks < 1) throw UsageError("expert map: at least one rank is needed");
  if (ranks > experts)
    throw UsageError("expert map: " + std::to_string(ranks) + " ranks for " +
                     std::to_string(experts) +
                     " routed experts; a rank must own at least one expert (use at most " +
                     std::to_string(experts) + " ranks)");
  std::vector<int> owners(experts);
  const int base = experts / ranks, extra = experts % ranks;
  int e = 0;
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < base + (r < extra ? 1 : 0); ++i) owners[e++] = r;
  return ExpertMap(std::move(owners), ranks, "contiguous");
}

ExpertMap ExpertMap::from_owners(std::vector<int> owners, int ranks) {
  if (owners.empty()) throw UsageError("expert map: the owner table is empty");
  return ExpertMap(std::move(owners), ranks, "table");
}

ExpertMap::ExpertMap(std::vector<int> owners, int ranks, std::string kind)
    : owners_(std::move(owners)), local_(owners_.size()), by_rank_(ranks > 0 ? ranks : 0),
      ranks_(ranks), kind_(std::move(kind)) {
  if (ranks < 1) throw UsageError("expert map: at least one rank is needed");
  for (std::size_t e = 0; e < owners_.size(); ++e) {
    const int r = owners_[e];
    if (r < 0 || r >= ranks)
      throw UsageError("expert map: expert " + std::to_string(e) + " has owner " +
                       std::to_string(r) + ", outside 0.." + std::to_string(ranks - 1));
    local_[e] = static_cast<int>(by_rank_[r].size());
    by_rank_[r].push_back(static_cast<int>(e));
  }
  for (int r = 0; r < ranks; ++r)
    if (by_rank_[r].empty())
      throw UsageError("expert map: rank " + std::to_string(r) + " owns no expert");
}

std::string ExpertMap::describe() const {
  std::string s = kind_ + ": " + std::to_string(experts()) + " experts over " +
                  std::to_string(ranks_) + " ranks (";
  for (int r = 0; r < ranks_; ++r)
    s += (r ? ", " : "") + std::to_string(by_rank_[r].size());
  return s + ")";
}

std::uint64_t ExpertMap::fingerprint() const {
  std::uint64_t h = kernels::mix64(static_cast<std::uint64_t>(ranks_) * 0x9E3779B97F4A7C15ull +
                                   owners_.size());
  for (int o : owners_) h = kernels::mix64(h ^ static_cast<std::uint64_t>(o + 1));
  return h;
}

}  // namespace moe::ep
