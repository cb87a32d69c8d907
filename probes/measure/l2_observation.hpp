#pragma once
// The L2 canary's readings judged on the host (kernels/bandwidth/l2_canary.hpp): how many of
// its lines the flush evicted and whether every observed flush had ended before its sample.
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/bandwidth/l2_canary.hpp"
#include "reports/report.hpp"

namespace moe::measure {

// A line counts as evicted when its load after the flush took this many times its load again
// straight after (an L2 hit): a read from HBM takes about twice a near L2 hit, and well over a
// far partition's hit, while a line that survived loads in the same time twice.
inline constexpr double kEvictedOverHit = 1.25;
// The share of canary lines a flush must evict, in the median observed sample, for the L2 to
// count as cold. A flush of twice the L2 evicts all of them (every observed sample of 40 runs,
// H100, 2026-12-06); one of half the L2 evicted up to 24 of the 32 lines in one of 20, which
// 0.75 let pass.
inline constexpr double kColdEvictedFraction = 0.9;
// Samples observed: the first, then every this many (the canary costs tens of microseconds
// outside the timed window, and a drain).
inline constexpr std::size_t kObserveEvery = 4;
// The device holds at most this many readings a measurement.
inline constexpr std::size_t kMaxObserved = 64;

inline bool observed_sample(std::size_t sample_index) {
  return sample_index % kObserveEvery == 0 && sample_index / kObserveEvery < kMaxObserved;
}

// One observed sample: its reading and the flushes issued before it (the counter it should see).
struct CanarySample {
  kernels::CanaryReading reading;
  unsigned flushes_issued = 0;
};

report::L2Observed summarize_canary(const std::vector<CanarySample>& samples);

// Whether the observation shows a cold L2 at the start of the samples, and the figures in words.
bool observed_cold(const report::L2Observed& o);
std::string describe(const report::L2Observed& o);

}  // namespace moe::measure
