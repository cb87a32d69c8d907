// Kernel busy time: the union of kernel intervals, which stays within the window when kernels
// overlap (programmatic dependent launch), unlike the sum of their durations.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "probes/measure/busy_time.hpp"

using moe::measure::busy_time_us;
using moe::measure::KernelInterval;

TEST_CASE("disjoint kernels: busy time is the sum of their durations") {
  std::vector<KernelInterval> k{{5000, 7000}, {1000, 3000}, {9000, 9500}};
  CHECK(busy_time_us(k) == doctest::Approx(4.5));
}

TEST_CASE("overlapping, nested and touching kernels count their union once") {
  // 1000-4000 overlapped by 3000-6000, 2000-2500 nested, 6000-7000 touching: 1000..7000.
  std::vector<KernelInterval> k{{3000, 6000}, {1000, 4000}, {2000, 2500}, {6000, 7000}};
  CHECK(busy_time_us(k) == doctest::Approx(6.0));
  // Sum of durations would be 3 + 3 + 0.5 + 1 = 7.5 us: more than the 6 us window.
}

TEST_CASE("empty input and empty or inverted intervals give zero") {
  std::vector<KernelInterval> none;
  CHECK(busy_time_us(none) == 0.0);
  std::vector<KernelInterval> degenerate{{100, 100}, {500, 200}};
  CHECK(busy_time_us(degenerate) == 0.0);
}

TEST_CASE("random intervals: busy time matches a per-nanosecond count") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_int_distribution<int> start(0, 900), len(0, 120), count(0, 12);
    std::vector<KernelInterval> k(count(rng));
    std::vector<char> covered(1100, 0);
    for (auto& i : k) {
      i.start_ns = start(rng);
      i.end_ns = i.start_ns + len(rng);
      for (auto t = i.start_ns; t < i.end_ns; ++t) covered[t] = 1;
    }
    const double expect = std::count(covered.begin(), covered.end(), 1) * 1e-3;
    CHECK(busy_time_us(k) == doctest::Approx(expect));
  }
}
