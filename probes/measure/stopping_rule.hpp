#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace moe::measure {

// When to stop sampling, in the manner of nvbench: enough samples AND enough GPU time AND low
// enough noise; or the timeout; or the sample cap. Defaults are nvbench's.
struct StoppingRule {
  std::size_t min_samples = 10;    // never fewer (unless the timeout hits first)
  double max_noise = 0.005;        // relative stddev of GPU time (0.5%)
  double min_time_s = 0.5;         // accumulated GPU-event time
  double timeout_s = 15.0;         // wall clock for one measurement
  std::size_t max_samples = 5000;  // memory bound on the raw series

  // Raises UsageError naming the field when a value is out of range.
  void validate() const;
};

enum class StopReason { converged, timeout, max_samples };
std::string to_string(StopReason r);

// Decides after each sample. `gpu_times_s` are all samples so far; `wall_s` the time since
// the measurement began. Returns nothing while sampling should go on.
std::optional<StopReason> should_stop(const StoppingRule& rule,
                                      const std::vector<double>& gpu_times_s, double wall_s);

}  // namespace moe::measure
