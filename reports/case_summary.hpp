#pragma once
// The figures every view of a report shows, computed once so the table, Markdown and HTML agree.
#include <optional>
#include <string>

#include "reports/report.hpp"

namespace moe::report {

struct CaseSummary {
  std::string measurement;            // the one summarised: "main", else the only one
  std::optional<Stats> gpu_time_us;   // absent when the case has no measurement
  std::optional<double> host_time_us; // median
  std::optional<double> kernel_time_us;
  std::optional<double> gbps;
  std::optional<double> pct_of_read_ceiling;
};

CaseSummary summarize_case(const CaseResult& c);

// "NVIDIA H200 (sm_90, 132 SMs), driver 580.95.05, driver CUDA 13.0, runtime 13.0" or
// "no GPU (reason)".
std::string describe_gpu(const Report& r);
// "moebench 0.1.0 d7cabc8b1234 (Release, sm 90a)", "+dirty" when built from a modified tree.
std::string describe_tool(const Report& r);
// The read ceiling measured in this run (probe copy's "read" case, or any case's
// "read_ceiling_gbps" metric), if any.
std::optional<double> read_ceiling_gbps(const Report& r);

}  // namespace moe::report
