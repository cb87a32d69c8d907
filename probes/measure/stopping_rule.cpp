#include "probes/measure/stopping_rule.hpp"

#include <numeric>
#include <sstream>

#include "common/errors.hpp"
#include "reports/statistics.hpp"

namespace moe::measure {

namespace {
std::string str(double v) {  // shortest form a user would type: 0.5, not 0.500000
  std::ostringstream o;
  o << v;
  return o.str();
}
}  // namespace

void StoppingRule::validate() const {
  if (min_samples < 1 || min_samples > 1000000)
    throw UsageError("--min-samples " + std::to_string(min_samples) +
                     " is out of range: 1..1000000");
  if (!(max_noise > 0 && max_noise <= 1))
    throw UsageError("--max-noise " + str(max_noise * 100) +
                     "% is out of range: (0, 100] percent");
  if (!(min_time_s >= 0 && min_time_s <= 3600))
    throw UsageError("--min-time " + str(min_time_s) + " is out of range: 0..3600 s");
  if (!(timeout_s > 0 && timeout_s <= 86400))
    throw UsageError("--timeout " + str(timeout_s) + " is out of range: (0, 86400] s");
  if (max_samples < min_samples || max_samples > 1000000)
    throw UsageError("--max-samples " + std::to_string(max_samples) + " is out of range: " +
                     "--min-samples (" + std::to_string(min_samples) + ")..1000000");
}

std::string to_string(StopReason r) {
  switch (r) {
    case StopReason::converged: return "converged";
    case StopReason::timeout: return "timeout";
    case StopReason::max_samples: return "max_samples";
  }
  return "?";
}

std::optional<StopReason> should_stop(const StoppingRule& rule,
                                      const std::vector<double>& gpu_times_s, double wall_s) {
  const std::size_t n = gpu_times_s.size();
  if (n == 0) return std::nullopt;  // always at least one sample
  if (n >= rule.max_samples) return StopReason::max_samples;
  if (wall_s >= rule.timeout_s) return StopReason::timeout;
  if (n < rule.min_samples) return std::nullopt;
  const double total = std::accumulate(gpu_times_s.begin(), gpu_times_s.end(), 0.0);
  if (total < rule.min_time_s) return std::nullopt;
  if (report::relative_stddev(gpu_times_s) > rule.max_noise) return std::nullopt;
  return StopReason::converged;
}

}  // namespace moe::measure
