#pragma once
// Distribution-free two-sample statistics for comparing sample series (reports/COMPARE.md):
// the Mann-Whitney U test and the Hodges-Lehmann shift estimate with its confidence interval.
// Both use ranks only, so a few outliers (a preempted sample, a clock dip) cannot move them the
// way they move a mean.
#include <cstddef>
#include <vector>

namespace moe::report {

struct RankTest {
  double u = 0;        // U statistic of `head` (pairs where head > base, ties count half)
  double z = 0;        // normal approximation with tie and continuity corrections
  double p_value = 1;  // two-sided
  // Hodges-Lehmann: the median of all pairwise differences head[j] - base[i], and the interval
  // of those differences that the test cannot reject at the requested confidence.
  double shift = 0;
  double shift_low = 0;
  double shift_high = 0;
};

// `confidence` in (0, 1), e.g. 0.99. Both series must be non-empty. O((n + m) log(n + m)) time
// and O(n + m) memory: the pairwise differences are never materialised (their order statistics
// are found by bisection over counts), so series of thousands of samples stay cheap.
RankTest rank_test(std::vector<double> base, std::vector<double> head, double confidence);

// The k-th smallest (0-based) of the n*m differences head[j] - base[i]; both inputs sorted.
double pairwise_difference_quantile(const std::vector<double>& base_sorted,
                                    const std::vector<double>& head_sorted, double k);

// Standard normal quantile (inverse CDF), |error| < 1e-9; p in (0, 1).
double normal_quantile(double p);

}  // namespace moe::report
