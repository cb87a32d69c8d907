#include "reports/rank_test.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace moe::report {

double normal_quantile(double p) {
  // Acklam's rational approximation, refined by one Halley step on erfc.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  if (!(p > 0 && p < 1)) throw std::domain_error("normal_quantile: p must be in (0, 1)");
  constexpr double p_low = 0.02425;
  double x;
  if (p < p_low) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - p_low) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

namespace {

// Number of pairs (i, j) with head[j] - base[i] <= d; both sorted. Two pointers, O(n + m).
double count_differences_at_most(const std::vector<double>& base, const std::vector<double>& head,
                                 double d) {
  double count = 0;
  std::size_t i = 0;  // base[i..] are the values with head[j] - base[i] <= d, i.e. base >= h - d
  for (double h : head) {
    while (i < base.size() && base[i] < h - d) ++i;
    count += static_cast<double>(base.size() - i);
  }
  return count;
}

}  // namespace

double pairwise_difference_quantile(const std::vector<double>& base,
                                    const std::vector<double>& head, double k) {
  // Smallest d with count(diff <= d) > k. The answer is one of the differences, so bisection on
  // the value converges to it; 200 halvings reach the resolution of a double from any range.
  double lo = head.front() - base.back(), hi = head.back() - base.front();
  if (count_differences_at_most(base, head, lo) > k) return lo;
  for (int iter = 0; iter < 200 && lo < hi; ++iter) {
    const double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (count_differences_at_most(base, head, mid) > k)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

RankTest rank_test(std::vector<double> base, std::vector<double> head, double confidence) {
  if (base.empty() || head.empty()) throw std::invalid_argument("rank_test: empty series");
  std::sort(base.begin(), base.end());
  std::sort(head.begin(), head.end());
  const double n = static_cast<double>(base.size()), m = static_cast<double>(head.size());

  // Rank sum of `head` in the merged series, with mid-ranks for ties, and the tie correction
  // term sum(t^3 - t) over groups of equal values.
  double head_rank_sum = 0, tie_term = 0;
  std::size_t i = 0, j = 0;
  double next_rank = 1;
  while (i < base.size() || j < head.size()) {
    const double v = j == head.size() || (i < base.size() && base[i] <= head[j]) ? base[i]
                                                                                 : head[j];
    std::size_t in_base = 0, in_head = 0;
    while (i < base.size() && base[i] == v) ++i, ++in_base;
    while (j < head.size() && head[j] == v) ++j, ++in_head;
    const double t = static_cast<double>(in_base + in_head);
    const double mid_rank = next_rank + (t - 1) / 2;
    head_rank_sum += mid_rank * static_cast<double>(in_head);
    tie_term += t * t * t - t;
    next_rank += t;
  }

  RankTest r;
  r.u = head_rank_sum - m * (m + 1) / 2;
  const double mean_u = n * m / 2;
  const double total = n + m;
  const double var_u = n * m / 12 * ((total + 1) - tie_term / (total * (total - 1)));
  if (var_u > 0) {
    const double excess = std::abs(r.u - mean_u);
    r.z = std::copysign(std::max(0.0, excess - 0.5) / std::sqrt(var_u), r.u - mean_u);
    r.p_value = std::min(1.0, std::erfc(std::abs(r.z) / std::sqrt(2.0)));
  }

  // Hodges-Lehmann interval: the differences ranked k and n*m-1-k (0-based), where k is the
  // largest U the two-sided test would still reject at 1 - confidence (normal approximation).
  const double pairs = n * m;
  const double zc = normal_quantile(1 - (1 - confidence) / 2);
  const double k = std::floor(mean_u - zc * std::sqrt(n * m * (total + 1) / 12));
  r.shift = (pairwise_difference_quantile(base, head, std::floor((pairs - 1) / 2)) +
             pairwise_difference_quantile(base, head, std::ceil((pairs - 1) / 2))) / 2;
  if (k < 0) {  // too few samples for any interval at this confidence: all differences
    r.shift_low = head.front() - base.back();
    r.shift_high = head.back() - base.front();
  } else {
    r.shift_low = pairwise_difference_quantile(base, head, k);
    r.shift_high = pairwise_difference_quantile(base, head, pairs - 1 - k);
  }
  return r;
}

}  // namespace moe::report
