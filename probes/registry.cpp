// The list of probes. A new probe is one file under probes/ and one line here.
#include <array>

#include "common/errors.hpp"
#include "probes/probe.hpp"

namespace moe {

void run_copy_probe(ProbeState&);

namespace {
constexpr std::array kProbes{
    ProbeInfo{"copy",
              "device memory ceilings: read-only stream (the read ceiling), cudaMemcpy D2D and "
              "an SM copy kernel, over buffers several times the L2",
              &run_copy_probe, true},
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
