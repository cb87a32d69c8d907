#pragma once
// Where one rank's tokens go in a step: for each destination rank, the tokens with at least
// one routed slot on an expert it owns, in token order, each once. Its row r to destination d
// sits at record r of send block d (wire_layout.hpp), and its partial sum comes back at record
// r of receive block d of the combine.
#include <stdexcept>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/expert_map.hpp"

namespace moe::ep {

struct DispatchPlan {
  int ranks = 0;
  int top_k = 0;
  int capacity = 0;
  std::vector<int> counts;       // [P] rows to each destination
  std::vector<int> offsets;      // [P + 1] start of each destination's rows in `tokens`
  std::vector<int> tokens;       // [rows] token index per row, grouped by destination
  std::vector<int> slot_expert;  // [rows, top_k] destination-local expert per slot, or -1

  int rows() const { return offsets.empty() ? 0 : offsets.back(); }
};

// Tokens over a destination's capacity: bad input (exit 2), raised before anything is sent.
class CapacityOverflow : public UsageError {
 public:
  using UsageError::UsageError;
};

// Plans rank `source`'s m tokens with routed experts ids [m, top_k] (global expert ids).
// `capacity` is the fixed number of rows per destination block; a destination that would get
// more raises CapacityOverflow naming both ranks, the rows and the capacity. Capacity m never
// overflows (each token crosses to a rank at most once).
DispatchPlan plan_dispatch(const ExpertMap& map, int source, int m, int top_k,
                           const std::vector<int>& ids, int capacity);

}  // namespace moe::ep
