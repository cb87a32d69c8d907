#pragma once
#include <cstddef>
#include <vector>

namespace moe::report {

// Summary of one sample series, as every report shows it (docs/design/measurement.md).
struct Stats {
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0, mean = 0;
  double rsd = 0;  // relative standard deviation: sample stddev / mean, a fraction
  std::size_t count = 0;
};

// Linear interpolation between closest ranks (the "type 7" definition numpy and R default to),
// so p50 of an even count is the mean of the middle two. `sorted` must be ascending.
double percentile_sorted(const std::vector<double>& sorted, double p);

// Empty input gives an all-zero Stats with count 0.
Stats summarize(const std::vector<double>& samples);

// stddev / mean over the samples (0 for fewer than two samples or a zero mean).
double relative_stddev(const std::vector<double>& samples);

}  // namespace moe::report
