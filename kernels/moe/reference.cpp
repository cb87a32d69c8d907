#include "kernels/moe/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include "kernels/moe/bf16.hpp"
#include "kernels/moe/generate.hpp"

namespace moe::kernels::ref {

std::vector<double> router_logits(const MoeDims& d, std::uint64_t seed, const std::vector<float>& x,
                                  int m, const float* bias) {
  std::vector<double> logits(static_cast<std::size_t>(m) * d.experts);
  std::vector<float> row(d.hidden);
  for (int e = 0; e < d.experts; ++e) {
    router_row_host(d, seed, e, row.data());
    for (int t = 0; t < m; ++t) {
      double s = 0;
      const float* xt = x.data() + static_cast<std::size_t>(t) * d.hidden;
      for (int h = 0; h < d.hidden; ++h) s += static_cast<double>(xt[h]) * row[h];
      logits[static_cast<std::size_t>(t) * d.experts + e] = s + (bias ? bias[e] : 0.0);
    }
  }
  return logits;
}

void weights_for_ids(const MoeDims& d, const double* logits, const int* ids, double* w) {
  if (d.scoring == Scoring::softmax) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int e = 0; e < d.experts; ++e) mx = std::max(mx, logits[e]);
    double sum = 0;
    for (int e = 0; e < d.experts; ++e) sum += std::exp(logits[e] - mx);
    for (int r = 0; r < d.top_k; ++r) w[r] = std::exp(logits[ids[r]] - mx) / sum;
  } else {
    for (int r = 0; r < d.top_k; ++r) w[r] = 1.0 / (1.0 + std::exp(-logits[ids[r]]));
  }
  if (d.renormalize) {
    double s = 0;
    for (int r = 0; r < d.top_k; ++r) s += w[r];
    for (int r = 0; r < d.top_k; ++r) w[r] /= s;
  }
}

namespace {
std::vector<int> ranked(const MoeDims& d, const double* logits) {
  std::vector<int> order(d.experts);
  for (int e = 0; e < d.experts; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  return order;
}
}  // namespace

void route_token(const MoeDims& d, const double* logits, int* ids, double* weights) {
  const std::vector<int> order = ranked(d, logits);
  for (int r = 0; r < d.top_k; ++r) ids[r] = order[r];
  weights_for_ids(d, logits, ids, weights);
}

double topk_margin(const MoeDims& d, const double* logits) {
  if (d.top_k >= d.experts) return std::numeric_limits<double>::infinity();
  const std::vector<int> order = ranked(d, logits);
  return logits[order[d.top_k - 1]] - logits[order[d.top_k]];
}

Grouping group_pairs(const MoeDims& d, int m, const std::vector<int>& topk_ids) {
  const int et = d.total_experts(), slots = d.top_k + d.shared;
  Grouping g;
  g.counts.assign(et, 0);
  auto expert_of = [&](int t, int s) { return s < d.top_k ? topk_ids[t * d.top_k + s] : d.experts + s - d.top_k; };
  for (int t = 0; t < m; ++t)
    for (int s = 0; s < slots; ++s) ++g.counts[expert_of(t, s)];
  g.offsets.assign(et + 1, 0);
  for (int e = 0; e < et; ++e) {
    g.offsets[e + 1] = g.offsets[e] + g.counts[e];
    if (g.counts[e] > 0) g.active.push_back(e);
  }
  g.sorted_pairs.assign(static_cast<std::size_t>(m) * slots, -1);
  g.pair_position.assign(static_cast<std::size_t>(m) * slots, -1);
  std::vector<int> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (int t = 0; t < m; ++t)
    for (int s = 0; s < slots; ++s) {
      const int i = t * slots + s;
      const int pos = fill[expert_of(t, s)]++;
      g.sorted_pairs[pos] = i;
      g.pair_position[i] = pos;
    }
  return g;
}

void expert_gate_up(const MoeDims& d, std::uint64_t seed, int e, const float* x, int rows, float* h) {
  const int H = d.hidden, I = d.inter;
  std::vector<float> wg(H), wu(H);
  for (int j = 0; j < I; ++j) {
    expert_row_host(d, TensorKind::gate_up, seed, e, j, wg.data());
    expert_row_host(d, TensorKind::gate_up, seed, e, static_cast<std::size_t>(I) + j, wu.data());
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + static_cast<std::size_t>(r) * H;
      double g = 0, u = 0;
      for (int k = 0; k < H; ++k) {
        g += static_cast<double>(xr[k]) * wg[k];
        u += static_cast<double>(xr[k]) * wu[k];
      }
      const double hv = g / (1.0 + std::exp(-g)) * u;
      h[static_cast<std::size_t>(r) * I + j] = round_to_bf16(static_cast<float>(hv));
    }
  }
}

void expert_down(const MoeDims& d, std::uint64_t seed, int e, const float* h, int rows, double* y) {
  const int H = d.hidden, I = d.inter;
  std::vector<float> w(I);
  for (int n = 0; n < H; ++n) {
    expert_row_host(d, TensorKind::down, seed, e, n, w.data());
    for (int r = 0; r < rows; ++r) {
      const float* hr = h + static_cast<std::size_t>(r) * I;
      double s = 0;
      for (int j = 0; j < I; ++j) s += static_cast<double>(hr[j]) * w[j];
      y[static_cast<std::size_t>(r) * H + n] = s;
    }
  }
}

std::vector<double> combine(const MoeDims& d, int n, const std::vector<double>& y,
                            const std::vector<double>& weights) {
  const int slots = d.top_k + d.shared, H = d.hidden;
  std::vector<double> out(static_cast<std::size_t>(n) * H, 0.0);
  for (int t = 0; t < n; ++t)
    for (int s = 0; s < slots; ++s) {
      const double w = s < d.top_k ? weights[t * d.top_k + s] : 1.0;
      const double* ys = y.data() + (static_cast<std::size_t>(t) * slots + s) * H;
      for (int k = 0; k < H; ++k) out[static_cast<std::size_t>(t) * H + k] += w * ys[k];
    }
  return out;
}

std::vector<double> moe_layer(const MoeDims& d, std::uint64_t seed, const std::vector<float>& x, int n,
                              const std::vector<int>& ids, const std::vector<double>& weights,
                              int threads) {
  const int slots = d.top_k + d.shared, H = d.hidden, I = d.inter;
  // Tokens (and their slot) per expert, so each expert's weights are derived once.
  std::map<int, std::vector<std::pair<int, int>>> users;
  for (int t = 0; t < n; ++t)
    for (int s = 0; s < slots; ++s)
      users[s < d.top_k ? ids[t * d.top_k + s] : d.experts + s - d.top_k].push_back({t, s});
  std::vector<int> experts;
  for (auto& kv : users) experts.push_back(kv.first);
  std::vector<double> y(static_cast<std::size_t>(n) * slots * H, 0.0);
  auto work = [&](std::size_t first, std::size_t step) {
    for (std::size_t i = first; i < experts.size(); i += step) {
      const int e = experts[i];
      const auto& u = users.at(e);
      const int rows = static_cast<int>(u.size());
      std::vector<float> xs(static_cast<std::size_t>(rows) * H), h(static_cast<std::size_t>(rows) * I);
      std::vector<double> ye(static_cast<std::size_t>(rows) * H);
      for (int r = 0; r < rows; ++r)
        std::copy_n(x.data() + static_cast<std::size_t>(u[r].first) * H, H, xs.data() + static_cast<std::size_t>(r) * H);
      expert_gate_up(d, seed, e, xs.data(), rows, h.data());
      expert_down(d, seed, e, h.data(), rows, ye.data());
      for (int r = 0; r < rows; ++r)
        std::copy_n(ye.data() + static_cast<std::size_t>(r) * H, H,
                    y.data() + (static_cast<std::size_t>(u[r].first) * slots + u[r].second) * H);
    }
  };
  unsigned nt = threads > 0 ? static_cast<unsigned>(threads) : std::max(1u, std::thread::hardware_concurrency());
  nt = std::min<unsigned>(nt, static_cast<unsigned>(experts.size()));
  if (nt <= 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < nt; ++i) pool.emplace_back(work, i, nt);
    for (auto& th : pool) th.join();
  }
  return combine(d, n, y, weights);
}

}  // namespace moe::kernels::ref
