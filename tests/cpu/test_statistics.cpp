#include <doctest/doctest.h>

#include <cmath>

#include "reports/statistics.hpp"

using moe::report::percentile_sorted;
using moe::report::relative_stddev;
using moe::report::summarize;

TEST_CASE("percentiles interpolate between closest ranks") {
  const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(percentile_sorted(v, 0.0) == 1);
  CHECK(percentile_sorted(v, 1.0) == 10);
  CHECK(percentile_sorted(v, 0.5) == doctest::Approx(5.5));
  CHECK(percentile_sorted(v, 0.1) == doctest::Approx(1.9));
  CHECK(percentile_sorted(v, 0.9) == doctest::Approx(9.1));
  CHECK(percentile_sorted({42}, 0.3) == 42);
  CHECK(percentile_sorted({}, 0.5) == 0);
}

TEST_CASE("summarize gives min, p10, median, p90, max, mean and relative stddev") {
  // Unsorted on purpose: summarize must not depend on sample order.
  const std::vector<double> v{9, 1, 5, 3, 7};
  const auto s = summarize(v);
  CHECK(s.count == 5);
  CHECK(s.min == 1);
  CHECK(s.max == 9);
  CHECK(s.median == 5);
  CHECK(s.mean == doctest::Approx(5));
  CHECK(s.p10 == doctest::Approx(1.8));
  CHECK(s.p90 == doctest::Approx(8.2));
  // Sample stddev of {1,3,5,7,9} is sqrt(10); over the mean 5.
  CHECK(s.rsd == doctest::Approx(std::sqrt(10.0) / 5));
}

TEST_CASE("relative stddev is zero for constant series and short ones") {
  CHECK(relative_stddev({3, 3, 3, 3}) == 0);
  CHECK(relative_stddev({3}) == 0);
  CHECK(relative_stddev({}) == 0);
  CHECK(relative_stddev({0, 0}) == 0);
  CHECK(relative_stddev({99, 101}) == doctest::Approx(std::sqrt(2.0) / 100));
}

TEST_CASE("summarize of nothing is all zero") {
  const auto s = summarize({});
  CHECK(s.count == 0);
  CHECK(s.median == 0);
  CHECK(s.rsd == 0);
}
