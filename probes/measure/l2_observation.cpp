#include "probes/measure/l2_observation.hpp"

#include <algorithm>
#include <cstdio>

namespace moe::measure {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

report::L2Observed summarize_canary(const std::vector<CanarySample>& samples) {
  report::L2Observed o;
  o.samples_observed = samples.size();
  o.observe_every = kObserveEvery;
  o.lines = kernels::kCanaryLines;
  std::vector<double> fractions, cold, hot;
  for (const CanarySample& s : samples) {
    if (s.reading.flushes_seen < s.flushes_issued) ++o.flushes_unfinished;
    int evicted = 0;
    for (int i = 0; i < kernels::kCanaryLines; ++i) {
      const double c = static_cast<double>(s.reading.cold_cycles[i]);
      const double h = static_cast<double>(s.reading.hot_cycles[i]);
      cold.push_back(c);
      hot.push_back(h);
      evicted += c >= kEvictedOverHit * h ? 1 : 0;
    }
    fractions.push_back(static_cast<double>(evicted) / kernels::kCanaryLines);
  }
  o.evicted_fraction_median = median(fractions);
  o.evicted_fraction_min = fractions.empty() ? 0 : *std::min_element(fractions.begin(), fractions.end());
  o.cold_load_cycles_median = median(cold);
  o.hot_load_cycles_median = median(hot);
  return o;
}

bool observed_cold(const report::L2Observed& o) {
  return o.samples_observed > 0 && o.flushes_unfinished == 0 && o.evicted_fraction_median >= kColdEvictedFraction;
}

std::string describe(const report::L2Observed& o) {
  if (o.samples_observed == 0) return "the flush was not observed (no sample observed)";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "canary after the flush, %zu samples observed (the first, then every %zu): %.0f%% of %zu lines "
                "evicted (median; least %.0f%%, %.0f%% needed), a load %.0f cycles after the flush against %.0f "
                "again, %zu flushes unfinished when their sample began",
                o.samples_observed, o.observe_every, 100.0 * o.evicted_fraction_median, o.lines,
                100.0 * o.evicted_fraction_min, 100.0 * kColdEvictedFraction, o.cold_load_cycles_median,
                o.hot_load_cycles_median, o.flushes_unfinished);
  return buf;
}

}  // namespace moe::measure
