#pragma once
// Time during which at least one kernel ran: the length of the union of kernel intervals.
// Why not the sum of durations: with programmatic dependent launch (the forward's default) a
// kernel starts before the previous one ends, so summed durations exceed the window's GPU-event
// time and "event time minus kernel time" (the launch gap) goes negative.
#include <cstdint>
#include <vector>

namespace moe::measure {

struct KernelInterval {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // end < start counts as empty
};

// Sorts `intervals` by start (the caller's vector is the scratch space) and returns the
// microseconds covered by their union.
double busy_time_us(std::vector<KernelInterval>& intervals);

}  // namespace moe::measure
