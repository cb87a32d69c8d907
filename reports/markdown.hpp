#pragma once
// Markdown for CI job summaries ($GITHUB_STEP_SUMMARY) and pull-request comments: GitHub
// Flavored Markdown tables, with long detail folded into <details>.
#include <string>

#include "reports/compare.hpp"
#include "reports/report.hpp"

namespace moe::report {

std::string render_markdown(const Report& report);
std::string render_markdown(const Comparison& comparison);

}  // namespace moe::report
