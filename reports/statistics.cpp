#include "reports/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace moe::report {

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double relative_stddev(const std::vector<double>& samples) {
  const std::size_t n = samples.size();
  if (n < 2) return 0;
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (mean == 0) return 0;
  double ss = 0;
  for (double x : samples) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(n - 1)) / std::abs(mean);
}

Stats summarize(const std::vector<double>& samples) {
  Stats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.p10 = percentile_sorted(sorted, 0.10);
  s.median = percentile_sorted(sorted, 0.50);
  s.p90 = percentile_sorted(sorted, 0.90);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.count);
  s.rsd = relative_stddev(samples);
  return s;
}

}  // namespace moe::report
