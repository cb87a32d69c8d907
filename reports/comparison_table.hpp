#pragma once
#include <string>

#include "reports/compare.hpp"

namespace moe::report {

// The terminal view of a comparison: environment warnings, verdict changes (worse first), one
// row per compared metric (regressions first), cases found in one report only, and a summary.
std::string render_comparison_table(const Comparison& comparison);

}  // namespace moe::report
