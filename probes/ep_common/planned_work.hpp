#pragma once
// What the expert-parallel probes' cases cost a worker, for the launcher's deadline
// (probes/ep_common/worker_deadline.hpp): upper bounds from the shape, the tokens and the
// ranks, never measurements, so the launcher knows them before any worker starts.
#include <cstddef>
#include <vector>

#include "kernels/moe/moe_types.hpp"
#include "probes/ep_common/worker_deadline.hpp"

namespace moe::ep {

// A sharded bf16 layer over `ranks` built once, `steps` steps of `m` tokens a rank run, and
// `checks` outputs checked on the CPU (affordable_tokens of m each). Device bytes: the rank's
// weights generated, and per step every received row reading each of its local experts whole
// (the per-row compute's worst case; the grouped one reads less).
PlannedCase sharded_layer_case(const kernels::MoeDims& dims, int m, int ranks, int steps, int checks);

// An exchange of `bytes` a rank, checked once and timed `reps` times.
PlannedCase link_case(std::size_t bytes, int reps);

// Probe ep-step's sweep: the alltoall ceiling, then per shape, tokens per rank, exchange and
// mode one layer with its exchange checks (a rank-coded step and its repeat), checked, warm-up
// and timed steps.
inline constexpr int kEpStepExchangeCheckSteps = 2;
inline constexpr int kEpStepWarmup = 3;
inline constexpr int kEpStepReps = 20;
inline constexpr std::size_t kEpStepCeilingBytes = std::size_t{256} << 20;
inline constexpr int kEpStepCeilingReps = 10;
WorkerPlan ep_step_plan(const std::vector<kernels::MoeDims>& shapes, const std::vector<int>& ms,
                        int exchanges, int modes, int ranks);

}  // namespace moe::ep
