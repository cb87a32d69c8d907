#pragma once
// Expert residency's policy (docs/bugs.md, bug 6), host only: a telemetry window becomes a plan saying
// which routed experts of a layer stay on the device (hot) and which wait in pinned host
// memory (cold). Shared experts serve every token and are always hot; they are not planned.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/telemetry_window.hpp"

namespace moe {

enum class Placement : std::uint8_t { device, host };

struct ResidencyPolicy {
  // An expert is a candidate when it received at least this share of the window's pairs.
  double hot_share = 0.01;
  // Device bytes the hot routed experts of a layer may take; 0: no cap.
  std::size_t budget_bytes = 0;
};

struct ResidencyPlan {
  std::vector<Placement> placement;  // [E] routed experts
  // True when the window could not be used and the whole bank stays resident; `reason` then
  // says why (never silently).
  bool fallback = false;
  std::string reason;
  int hot() const;
  int cold() const;
};

// Every routed expert on the device, with `reason` recorded.
ResidencyPlan all_resident(int experts, std::string reason);

// The plan for one layer from its window and the validator's verdict on it. Candidates are
// taken by count descending, ties by expert id ascending (the route's own tie-break), while the
// next expert still fits the budget. An unusable window (poisoned, overflowed, stale, foreign,
// inconsistent) or an empty one falls back to all resident, with its reason.
ResidencyPlan plan_residency(const TelemetryWindow& window, const WindowCheck& check,
                             std::size_t expert_bytes, const ResidencyPolicy& policy);

}  // namespace moe
