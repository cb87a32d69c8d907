#pragma once
#include <vector>

#include "apps/moebench/live_report.hpp"
#include "apps/moebench/run_request.hpp"
#include "apps/moebench/stop_signals.hpp"
#include "probes/probe.hpp"

namespace moe::cli {

// Runs `probes`: in this process with --in-process, else each in a child moebench so a sticky
// CUDA error or a crash costs only that probe (recorded as its ERROR case with the log tail).
// Every case reaches `report` (and its file) as soon as it is finished, the children's too
// (report::RunEventWriter). A stop signal (`stop`) is passed on to the running child, whose
// finished cases are kept, and no further probe starts; the caller then records the
// interruption. In this process, a stop signal ends the process (ExitOnStopSignal).
void run_probes(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                const RunOptions& options, LiveReport& report, const StopSignals& stop);

}  // namespace moe::cli
