#include "probes/ep_common/planned_work.hpp"

#include <algorithm>

#include "probes/layer_check.hpp"

namespace moe::ep {

PlannedCase sharded_layer_case(const kernels::MoeDims& dims, int m, int ranks, int steps, int checks) {
  const double expert_bytes = 3.0 * dims.hidden * dims.inter * 2;  // gate, up, down in bf16
  const int local = (dims.experts + ranks - 1) / ranks;
  const double weights = (local + dims.shared) * expert_bytes + 2.0 * dims.experts * dims.hidden;
  const double rows = static_cast<double>(m) * ranks * std::min(dims.top_k, local);
  const double step = rows * expert_bytes + static_cast<double>(m) * dims.shared * expert_bytes;
  PlannedCase c;
  c.device_bytes = weights + steps * step;
  c.host_macs = checks * affordable_tokens(dims, m) * reference_macs_per_token(dims);
  return c;
}

PlannedCase link_case(std::size_t bytes, int reps) {
  PlannedCase c;
  c.device_bytes = 2.0 * static_cast<double>(bytes) * (reps + 1);  // read and written
  return c;
}

WorkerPlan ep_step_plan(const std::vector<kernels::MoeDims>& shapes, const std::vector<int>& ms,
                        int exchanges, int modes, int ranks) {
  WorkerPlan plan;
  plan.cases.push_back(link_case(kEpStepCeilingBytes, kEpStepCeilingReps));
  // Exchange checks, checked, warm-up and timed steps; graph mode adds the capture and the
  // checked replay.
  const int steps = kEpStepExchangeCheckSteps + 1 + kEpStepWarmup + kEpStepReps + 2;
  for (const kernels::MoeDims& dims : shapes)
    for (int m : ms)
      for (int i = 0; i < exchanges * modes; ++i)
        plan.cases.push_back(sharded_layer_case(dims, m, ranks, steps, 1));
  return plan;
}

}  // namespace moe::ep
