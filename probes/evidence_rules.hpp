#pragma once
// The evidence rules of the probes as plain host functions, so the CPU tests check them over
// fabricated results (tests/cpu/test_evidence_rules.cpp): what each probe must prove for a
// PASS, and when a bandwidth figure has the L2 defeated.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report.hpp"

namespace moe {

// The evidence every case of `probe` must prove (each a boolean in the case's evidence) for a
// PASS, in the order the probe records it. ProbeState::new_case declares it on every case. A
// probe not listed requires none: it PASSes on its checks alone, and selftest does not accept
// its clean rows until it declares some.
const std::vector<std::string>& required_evidence(std::string_view probe);
// The same for a probe that runs through an engine adapter (--engine), whose engine it cannot
// look inside: what it can prove from outside.
const std::vector<std::string>& required_evidence_through_adapter(std::string_view probe);

// Working set at which a step's distinct weights alone defeat the L2, as a multiple of it (the
// engine's layer plan aims for this; docs/bugs.md, bug 4).
inline constexpr double kWorkingSetDefeatsL2 = 4.0;

// Whether a measurement's figure is the memory's and not the cache's: every sample followed
// an L2 flush and the canary observed after the flush found the L2 cold (a flush that ran is
// not yet one that evicted: measure/l2_observation.hpp), or the working set is at least
// kWorkingSetDefeatsL2 times the L2.
struct L2Defeat {
  bool defeated = false;
  bool every_sample_flushed = false;
  bool flush_observed_cold = false;
  std::string detail;  // the counts and the observed figures in words, for a check or a reason
};
L2Defeat l2_defeat(std::size_t flushed_samples, std::size_t samples, double working_set_over_l2,
                   const std::optional<report::L2Observed>& observed);

// Probe host-nonblocking's threshold on host enqueue time over GPU time (see the probe).
inline constexpr double kHostOverGpuLimit = 0.3;

}  // namespace moe
