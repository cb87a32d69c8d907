#pragma once
// What the expert-parallel probes of a run need, checked once before any probe runs so that a
// missing piece is one line and exit 3 at the CLI (not an ERROR case per probe): a build with
// NCCL, a loadable libnccl.so.2 and, for the single-host launcher, the GPUs of --devices (two at
// least). A worker started by a launcher (RANK/WORLD_SIZE... set) needs only its own GPU.
#include <vector>

#include "probes/probe.hpp"

namespace moe::ep {

// Raises EnvironmentError naming what is missing; does nothing when no selected probe needs
// more than one GPU.
void check_multi_gpu_requirements(const std::vector<const ProbeInfo*>& probes, const RunOptions& options);

}  // namespace moe::ep
