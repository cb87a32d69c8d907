// The list of probes. A new probe is one file under probes/ and one line here.
#include <array>

#include "common/errors.hpp"
#include "probes/probe.hpp"

namespace moe {

void run_copy_probe(ProbeState&);
void run_bandwidth_probe(ProbeState&);
void run_capture_replay_probe(ProbeState&);

namespace {
constexpr std::array kProbes{
    ProbeInfo{"copy",
              "device memory ceilings: read-only stream (the read ceiling), cudaMemcpy D2D and "
              "an SM copy kernel, over buffers several times the L2",
              &run_copy_probe, true},
    ProbeInfo{"bandwidth",
              "one decode step per shape, M, format and mode: GPU, host and kernel time, "
              "bytes (dedup and not), GB/s and percent of the read ceiling",
              &run_bandwidth_probe, true},
    ProbeInfo{"capture-replay",
              "graph capture and replay: capture refusals, no sync in capture, replays after "
              "input changes, repeated cycles, eager after replay, teardown; host time saved",
              &run_capture_replay_probe, true},
};
}  // namespace

std::span<const ProbeInfo> all_probes() { return kProbes; }

const ProbeInfo& probe_by_name(std::string_view name) {
  std::string valid;
  for (const ProbeInfo& p : kProbes) {
    if (p.name == name) return p;
    valid += (valid.empty() ? "" : ", ") + std::string(p.name);
  }
  throw UsageError("unknown probe '" + std::string(name) + "'; valid probes: " + valid);
}

}  // namespace moe
