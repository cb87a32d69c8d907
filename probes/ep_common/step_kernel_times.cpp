#include "probes/ep_common/step_kernel_times.hpp"

#include "probes/measure/busy_time.hpp"

namespace moe::ep {

bool is_exchange_kernel(const std::string& name) {
  return name.find("nccl") != std::string::npos || name.find("lsa_copy_kernel") != std::string::npos;
}

StepKernelTimes step_kernel_times(const std::vector<measure::KernelRecord>& records) {
  std::vector<measure::KernelInterval> all, exchange, other;
  StepKernelTimes t;
  for (const measure::KernelRecord& r : records) {
    const measure::KernelInterval i{r.start_ns, r.end_ns};
    all.push_back(i);
    if (is_exchange_kernel(r.name)) {
      exchange.push_back(i);
      ++t.exchange_kernels;
    } else {
      other.push_back(i);
    }
  }
  t.kernels = records.size();
  t.busy_us = measure::busy_time_us(all);
  t.exchange_busy_us = measure::busy_time_us(exchange);
  t.other_busy_us = measure::busy_time_us(other);
  return t;
}

}  // namespace moe::ep
