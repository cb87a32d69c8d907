#pragma once
// What catching each mutation means, by the checks that exist for it: the probes (and their
// cases) a mutation applies to and the checks that must FAIL there. `moebench selftest` judges
// its matrix by this (reports/verdict.hpp, judge_mutation_row), and tests/gpu/test_bug_probes
// asserts on the same names, so a probe that goes red for some other reason does not count as
// having caught its bug.
#include <vector>

#include "engine/fault_injection.hpp"
#include "reports/verdict.hpp"

namespace moe {

// The targets of `m`, the probe it names first. A mutation without an entry here gets one
// target, its probe, with no checks named: each of that probe's cases must then FAIL.
std::vector<report::CatchTarget> catch_targets(const MutationInfo& m);

// The probes selftest runs clean besides the ones a mutation targets: the measurement probes,
// whose clean rows show their evidence (buffers over the L2, the L2 defeated).
std::vector<std::string> clean_only_probes();

}  // namespace moe
