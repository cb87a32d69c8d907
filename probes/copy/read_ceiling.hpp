#pragma once
#include <cstddef>

#include "probes/probe.hpp"

namespace moe {

// The device's read ceiling in this run: a read-only streaming kernel (16-byte loads, every SM)
// over a buffer many times the L2, checked against its CPU reference before it is trusted.
// Every bandwidth figure is given as a percentage of it (docs/design/measurement.md).
struct ReadCeiling {
  double gbps = 0;
  std::size_t bytes = 0;
  report::Measurement measurement;
  report::Check check;  // the kernel's XOR matched the CPU's
};

// Buffer size for ceiling measurements: `requested` if non-zero, else 4 GiB, reduced to fit
// `buffers` copies in free memory; at least 8x the L2 or EnvironmentError.
std::size_t stream_buffer_bytes(const Device& device, std::size_t requested, int buffers);

ReadCeiling measure_read_ceiling(ProbeState& state, std::size_t bytes);

// The ceiling a measuring probe divides its figures by: over the run's stream buffer size
// (--copy-bytes, else 4 GiB capped by free memory), its check passed or a probe error.
ReadCeiling checked_read_ceiling(ProbeState& state);

}  // namespace moe
