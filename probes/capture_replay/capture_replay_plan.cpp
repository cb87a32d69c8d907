#include "probes/capture_replay/capture_replay_plan.hpp"

#include <algorithm>

namespace moe {

std::size_t count_poison(const std::vector<std::uint16_t>& values) {
  return static_cast<std::size_t>(std::count(values.begin(), values.end(), kPoisonBf16));
}

int regrow_tokens(int m, std::size_t capacity, const std::function<std::size_t(int)>& scratch_bytes,
                  int limit) {
  for (long long big = 2LL * std::max(m, 1); big <= limit; big *= 2)
    if (scratch_bytes(static_cast<int>(big)) > capacity) return static_cast<int>(big);
  return 0;
}

}  // namespace moe
