#include "probes/stages/stage_evidence.hpp"

#include "probes/measure/l2_observation.hpp"

namespace moe {

bool timed_stage(kernels::Stage stage) { return stage != kernels::Stage::other; }

StageEvidence stage_evidence(const std::vector<StageSample>& samples, std::size_t l2_flushes,
                             const std::optional<report::L2Observed>& observed) {
  StageEvidence e;
  const std::size_t n = samples.size();
  e.l2_cold = n > 0 && l2_flushes >= n && observed && measure::observed_cold(*observed);
  e.l2_detail = std::to_string(l2_flushes) + " of " + std::to_string(n) + " samples followed an L2 flush; " +
                (observed ? measure::describe(*observed) : std::string("the flush was not observed")) +
                " (a stage's floor holds for bytes from memory: run with --l2 cold)";
  if (n == 0) {
    for (kernels::Stage stage : kernels::kStages)
      if (timed_stage(stage)) e.stages_without_kernels.push_back(stage);
    e.kernels_detail = "no sample with kernel records: no stage can be timed";
    return e;
  }
  for (kernels::Stage stage : kernels::kStages) {
    if (!timed_stage(stage)) continue;
    const auto i = static_cast<std::size_t>(stage);
    std::size_t without = 0;
    for (const StageSample& s : samples) without += s.kernels[i] == 0;
    if (without > 0) {
      e.stages_without_kernels.push_back(stage);
      if (!e.kernels_detail.empty()) e.kernels_detail += "; ";
      e.kernels_detail += "no " + std::string(kernels::to_string(stage)) + " kernel in " +
                          std::to_string(without) + " of " + std::to_string(n) +
                          " samples";
    }
  }
  e.every_stage_has_kernels = e.stages_without_kernels.empty();
  if (e.every_stage_has_kernels)
    e.kernels_detail = "route, gate_up, down and combine each ran a kernel in every one of " +
                       std::to_string(n) + " samples";
  else
    e.kernels_detail += ": such a stage is untimed, not 0 us";
  return e;
}

}  // namespace moe
