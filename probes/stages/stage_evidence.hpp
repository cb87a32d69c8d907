#pragma once
// What a stage breakdown must show before its figures stand (probe stages, evidence
// `l2_cold` and `every_stage_has_kernels`), as host functions over the samples, so the CPU
// tests check them on fabricated kernel records:
//  * every sample followed an L2 flush, and the flush was observed to leave the L2 cold (the
//    sampler's canary, probes/measure/l2_observation.hpp, as probe bandwidth requires): a
//    stage's floor is its bytes over the read ceiling, which holds for bytes from memory, not
//    from a warm L2, and a flush that ran beside the sample or over part of the L2 is no flush;
//  * each of the four stages ran at least one kernel in every sample: a stage with none would
//    read 0 us (not fast: untimed), and its share of the critical path would go to the others.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "probes/stages/stage_breakdown.hpp"
#include "reports/report.hpp"

namespace moe {

struct StageEvidence {
  bool l2_cold = false;
  std::string l2_detail;  // "3 of 5 samples followed an L2 flush (run with --l2 cold)"
  bool every_stage_has_kernels = false;
  std::vector<kernels::Stage> stages_without_kernels;  // of route, gate_up, down, combine
  std::string kernels_detail;  // "no combine kernel in 2 of 5 samples", or what every stage ran
};

// `samples`: one breakdown per timed sample; `l2_flushes`: the flushes the sampler did for
// them (absent counts as none: the figure is taken from what the sampler did, not what was
// asked); `observed`: the sampler's observation of its flushes (none: not proven cold).
StageEvidence stage_evidence(const std::vector<StageSample>& samples, std::size_t l2_flushes,
                             const std::optional<report::L2Observed>& observed);

// Whether `stage` is one of the four a layer's forward must run (`other` is not).
bool timed_stage(kernels::Stage stage);

}  // namespace moe
