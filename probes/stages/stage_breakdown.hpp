#pragma once
// A layer's GPU time split by stage, from the kernels of one sample (CUPTI records).
//
// Two figures a stage, because with programmatic dependent launch the stages overlap (gate_up
// streams the shared experts while the route still runs):
//  * own: the sum of its kernels' durations, from each kernel's start to its end. Overlapped
//    time counts in both stages, so the owns add up to more than the layer takes.
//  * critical: what the stage adds to the timeline: for each kernel in start order, the part
//    of its interval after every earlier kernel has ended. The criticals add up to the time
//    at least one kernel ran (the busy time), never double-counting an overlap; a gap between
//    kernels (launch latency) is in no stage.
// Each stage's floor is the bytes it must read over the read ceiling of the same run.
#include <array>
#include <cstddef>
#include <vector>

#include "kernels/moe/kernel_stage.hpp"
#include "probes/measure/kernel_activity.hpp"

namespace moe {

inline constexpr std::size_t kStageCount = std::size(kernels::kStages);

struct StageSample {
  std::array<double, kStageCount> own_us{};
  std::array<double, kStageCount> critical_us{};
  std::array<std::size_t, kStageCount> kernels{};
  double busy_us = 0;  // sum of criticals
};

// One sample's kernels, any order; `layers` divides every figure (per-layer time of a step
// that runs the layers back to back).
StageSample split_by_stage(const std::vector<measure::KernelRecord>& records, int layers);

// The bytes each stage of one layer must read at least, given what the route chose.
struct StageBytes {
  std::array<double, kStageCount> bytes{};
};

struct LayerTraffic {
  double router = 0;           // router weights (and bias)
  double activations_in = 0;   // x, read by the route and by gate_up
  double gate_up_weights = 0;  // of the distinct experts touched (shared ones included)
  double down_weights = 0;
  double h = 0;                // gate_up's output, read by down
  double down_out = 0;         // down's per-pair outputs, read by combine
};
StageBytes stage_bytes(const LayerTraffic& t);

}  // namespace moe
