#pragma once
// A rank's CUPTI kernel times of one step, beside the step's event times: from the kernel
// records of the step's window (measure::KernelActivity), the time at least one kernel ran,
// split into the exchange's kernels (NCCL's device kernels and the lsa copy) and the rest
// (route, pack, expert compute, combine), each the union of its intervals (busy_time.hpp), so
// overlapping kernels count once. An exchange's event time minus its kernels' time is what no
// kernel of this rank covered there: launch gaps and host polling between the parts.
#include <cstddef>
#include <string>
#include <vector>

#include "probes/measure/kernel_activity.hpp"

namespace moe::ep {

struct StepKernelTimes {
  double busy_us = 0;           // union of every kernel's interval
  double exchange_busy_us = 0;  // union of the exchange kernels' intervals
  double other_busy_us = 0;     // union of the other kernels' intervals
  std::size_t kernels = 0;
  std::size_t exchange_kernels = 0;
};

// NCCL's device kernels carry "nccl" in their (mangled) names, the lsa exchange's is
// lsa_copy_kernel.
bool is_exchange_kernel(const std::string& name);

StepKernelTimes step_kernel_times(const std::vector<measure::KernelRecord>& records);

}  // namespace moe::ep
