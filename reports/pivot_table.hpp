#pragma once
// One metric of a report laid out as a grid: a table per probe, a row per (case name, shape,
// format, mode), a column per M. The shape a results page or a README summary wants, where
// the full Markdown view has one row per case.
#include <optional>
#include <string>

#include "reports/report.hpp"

namespace moe::report {

struct PivotFilter {
  std::optional<std::string> probe;  // only this probe's cases
  std::optional<std::string> mode;   // only the cases run in this mode (eager, graph, ...)
};

// `metric` names an entry of the cases' `metrics` ("pct_of_read_ceiling", "gpu_us_per_layer",
// "replay_host_us", ...) or is "gpu" for the median GPU time of the case's main measurement.
// Only cases that pass the filter, ran without a mutation and carry the metric take part; the
// first line names the GPU, the build, the date and the verdicts of the filtered cases. Raises
// UsageError naming the metrics the report has when no case carries it.
std::string render_markdown_pivot(const Report& report, const std::string& metric,
                                  const PivotFilter& filter = {});

}  // namespace moe::report
