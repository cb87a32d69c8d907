#include "engine/ep/rank_output_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernels/moe/reference.hpp"

namespace moe::ep {

namespace kr = kernels::ref;

RankOutputCheck check_rank_output(const kernels::MoeDims& d, std::uint64_t seed,
                                  const std::vector<float>& x, const std::vector<float>& out,
                                  int m, int max_tokens) {
  RankOutputCheck c;
  const int H = d.hidden, K = d.top_k;
  const int n = std::max(1, std::min(m, max_tokens));
  std::vector<int> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back(static_cast<int>(static_cast<long long>(i) * m / n));
  std::vector<float> xs;
  for (int t : tokens) xs.insert(xs.end(), x.begin() + static_cast<std::size_t>(t) * H, x.begin() + static_cast<std::size_t>(t + 1) * H);
  const std::vector<double> logits = kr::router_logits(d, seed, xs, n, nullptr);
  std::vector<int> keep, ids;
  std::vector<double> w;
  std::vector<float> kept_x;
  for (int i = 0; i < n; ++i) {
    const double* l = logits.data() + static_cast<std::size_t>(i) * d.experts;
    if (kr::topk_margin(d, l) < 1e-3) {
      ++c.near_ties_skipped;
      continue;
    }
    std::vector<int> ti(K);
    std::vector<double> tw(K);
    kr::route_token(d, l, ti.data(), tw.data());
    for (double& v : tw) v = static_cast<float>(v);  // as the weights cross the link
    ids.insert(ids.end(), ti.begin(), ti.end());
    w.insert(w.end(), tw.begin(), tw.end());
    keep.push_back(tokens[i]);
    kept_x.insert(kept_x.end(), xs.begin() + static_cast<std::size_t>(i) * H, xs.begin() + static_cast<std::size_t>(i + 1) * H);
  }
  c.tokens_checked = static_cast<int>(keep.size());
  if (keep.empty()) {
    c.detail = "every checked token was a near-tie";
    return c;
  }
  const std::vector<double> ref = kr::moe_layer(d, seed, kept_x, c.tokens_checked, ids, w);
  double num = 0, den = 0;
  for (int i = 0; i < c.tokens_checked; ++i)
    for (int h = 0; h < H; ++h) {
      const double r = ref[static_cast<std::size_t>(i) * H + h];
      const double o = out[static_cast<std::size_t>(keep[i]) * H + h];
      num += (o - r) * (o - r);
      den += r * r;
    }
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : (num > 0 ? 1.0 : 0.0);
  c.passed = std::isfinite(c.rel_l2) && c.rel_l2 <= c.bound && den > 0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "relative L2 %.3g over %d tokens (bound %.3g, %d near-ties skipped)",
                c.rel_l2, c.tokens_checked, c.bound, c.near_ties_skipped);
  c.detail = buf;
  return c;
}

}  // namespace moe::ep
