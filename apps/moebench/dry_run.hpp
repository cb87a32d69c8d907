#pragma once
// `moebench run --dry-run`: every case the run would make, with its shape, layers, bytes and
// the floor those bytes set at a read ceiling; touches no GPU.
#include <string>
#include <vector>

#include "probes/probe.hpp"
#include "probes/run_options.hpp"

namespace moe::cli {

struct DryRunOptions {
  double ceiling_gbps = 4550;                     // an H200's read ceiling (brief section 7)
  std::size_t l2_bytes = std::size_t{60} << 20;   // an H200's L2, for the engine's layer count
};

// The plan as text: one row per case, the shapes with every parsed field, and the assumptions.
std::string render_dry_run(const std::vector<const ProbeInfo*>& probes, const RunOptions& options,
                           const DryRunOptions& dry);

}  // namespace moe::cli
