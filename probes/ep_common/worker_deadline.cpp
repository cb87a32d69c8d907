#include "probes/ep_common/worker_deadline.hpp"

#include <cmath>
#include <cstdio>

namespace moe::ep {

std::chrono::milliseconds worker_deadline(const WorkerPlan& plan, std::chrono::milliseconds timeout) {
  const double t = std::chrono::duration<double>(timeout).count();
  double seconds = (plan.setup_waits + kSpareWaits) * t;
  for (const PlannedCase& c : plan.cases)
    seconds += c.waits * t + c.host_macs / kSlowHostMacsPerSecond +
               c.device_bytes / kSlowDeviceBytesPerSecond + 1.0;
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000.0)));
}

std::string describe(const WorkerPlan& plan, std::chrono::milliseconds timeout) {
  double macs = 0, bytes = 0, waits = 0;
  for (const PlannedCase& c : plan.cases) {
    macs += c.host_macs;
    bytes += c.device_bytes;
    waits += c.waits;
  }
  char buf[200];
  std::snprintf(buf, sizeof buf, "%zu cases, %.2g host MACs, %.2g device bytes, %d + %g waits of %g s",
                plan.cases.size(), macs, bytes, plan.setup_waits + kSpareWaits, waits,
                std::chrono::duration<double>(timeout).count());
  return buf;
}

}  // namespace moe::ep
