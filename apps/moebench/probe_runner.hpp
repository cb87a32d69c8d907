#pragma once
#include <vector>

#include "apps/moebench/run_request.hpp"
#include "probes/probe.hpp"
#include "reports/report_writer.hpp"

namespace moe::cli {

// Runs `probes`: in this process with --in-process, else each in a child moebench so a sticky
// CUDA error or a crash costs only that probe (recorded as its ERROR case with the log tail).
// Every case is appended to `report` and the file rewritten at once. Returns early, with the
// cases so far, when SIGINT arrives (see interrupted()).
void run_probes(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                const RunOptions& options, report::Report& report,
                const report::ReportWriter& writer);

// Whether the last run_probes was stopped by SIGINT.
bool interrupted();

}  // namespace moe::cli
