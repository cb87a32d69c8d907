#include "probes/measure/busy_time.hpp"

#include <algorithm>

namespace moe::measure {

double busy_time_us(std::vector<KernelInterval>& intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const KernelInterval& a, const KernelInterval& b) { return a.start_ns < b.start_ns; });
  std::uint64_t covered = 0, run_start = 0, run_end = 0;
  bool open = false;
  for (const KernelInterval& k : intervals) {
    if (k.end_ns <= k.start_ns) continue;
    if (open && k.start_ns <= run_end) {
      run_end = std::max(run_end, k.end_ns);  // overlaps or touches the current run
      continue;
    }
    if (open) covered += run_end - run_start;
    run_start = k.start_ns;
    run_end = k.end_ns;
    open = true;
  }
  if (open) covered += run_end - run_start;
  return static_cast<double>(covered) * 1e-3;
}

}  // namespace moe::measure
