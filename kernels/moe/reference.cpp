#include "kernels/moe/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
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

namespace {

// The scores the weights come from: softmax over all E logits, or sigmoid per expert.
std::vector<double> scores_of(const MoeDims& d, const double* logits) {
  std::vector<double> sc(d.experts);
  if (d.scoring == Scoring::softmax) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int e = 0; e < d.experts; ++e) mx = std::max(mx, logits[e]);
    double sum = 0;
    for (int e = 0; e < d.experts; ++e) sum += std::exp(logits[e] - mx);
    for (int e = 0; e < d.experts; ++e) sc[e] = std::exp(logits[e] - mx) / sum;
  } else {
    for (int e = 0; e < d.experts; ++e) sc[e] = 1.0 / (1.0 + std::exp(-logits[e]));
  }
  return sc;
}

// Indices 0..n-1 by value descending, index ascending (the engine's tie rule everywhere).
std::vector<int> ranked(const std::vector<double>& v) {
  std::vector<int> order(v.size());
  for (std::size_t e = 0; e < v.size(); ++e) order[e] = static_cast<int>(e);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return v[a] > v[b] || (v[a] == v[b] && a < b);
  });
  return order;
}

// The choice of a grouped method: choice values per expert (scores + bias), the group scores,
// and whether each expert is in a kept group.
struct GroupedChoice {
  std::vector<double> choice, group_score;
  std::vector<int> group_order;
  std::vector<bool> allowed;
};

GroupedChoice grouped_choice(const MoeDims& d, const double* logits, const float* bias) {
  GroupedChoice c;
  c.choice = scores_of(d, logits);
  if (d.selection_bias())
    for (int e = 0; e < d.experts; ++e) c.choice[e] += bias[e];
  const int per = d.experts / d.n_group;
  c.group_score.assign(d.n_group, 0.0);
  for (int g = 0; g < d.n_group; ++g) {
    std::vector<double> members(c.choice.begin() + g * per, c.choice.begin() + (g + 1) * per);
    std::sort(members.begin(), members.end(), std::greater<>());
    c.group_score[g] = d.topk_method == TopKMethod::noaux_tc && per >= 2 ? members[0] + members[1] : members[0];
  }
  c.group_order = ranked(c.group_score);
  c.allowed.assign(d.experts, false);
  for (int r = 0; r < d.topk_group; ++r)
    for (int e = c.group_order[r] * per; e < (c.group_order[r] + 1) * per; ++e) c.allowed[e] = true;
  return c;
}

// The kept experts ranked by their choice values (excluded ones after them, never chosen).
std::vector<int> ranked_allowed(const GroupedChoice& c) {
  std::vector<double> v = c.choice;
  std::vector<int> order;
  for (int e : ranked(v))
    if (c.allowed[e]) order.push_back(e);
  return order;
}

}  // namespace

void weights_for_ids(const MoeDims& d, const double* logits, const int* ids, double* w) {
  const std::vector<double> sc = scores_of(d, logits);
  for (int r = 0; r < d.top_k; ++r) w[r] = sc[ids[r]];
  if (d.renormalize) {
    double s = 0;
    for (int r = 0; r < d.top_k; ++r) s += w[r];
    for (int r = 0; r < d.top_k; ++r) w[r] /= s;
  }
  for (int r = 0; r < d.top_k; ++r) w[r] *= d.routed_scaling;
}

void route_token(const MoeDims& d, const double* logits, int* ids, double* weights, const float* bias) {
  if (d.selection_bias() && !bias) throw std::invalid_argument("route_token: noaux_tc needs the selection bias");
  if (!d.grouped()) {
    const std::vector<int> order = ranked(std::vector<double>(logits, logits + d.experts));
    for (int r = 0; r < d.top_k; ++r) ids[r] = order[r];
  } else {
    const std::vector<int> order = ranked_allowed(grouped_choice(d, logits, bias));
    for (int r = 0; r < d.top_k; ++r) ids[r] = order[r];
  }
  weights_for_ids(d, logits, ids, weights);
}

double topk_margin(const MoeDims& d, const double* logits, const float* bias) {
  const double none = std::numeric_limits<double>::infinity();
  if (!d.grouped()) {
    if (d.top_k >= d.experts) return none;
    const std::vector<int> order = ranked(std::vector<double>(logits, logits + d.experts));
    return logits[order[d.top_k - 1]] - logits[order[d.top_k]];
  }
  if (d.selection_bias() && !bias) throw std::invalid_argument("topk_margin: noaux_tc needs the selection bias");
  const GroupedChoice c = grouped_choice(d, logits, bias);
  double margin = none;
  if (d.topk_group < d.n_group)
    margin = c.group_score[c.group_order[d.topk_group - 1]] - c.group_score[c.group_order[d.topk_group]];
  const std::vector<int> order = ranked_allowed(c);
  if (static_cast<int>(order.size()) > d.top_k)
    margin = std::min(margin, c.choice[order[d.top_k - 1]] - c.choice[order[d.top_k]]);
  return margin;
}

std::vector<double> shared_gate(const MoeDims& d, std::uint64_t seed, const std::vector<float>& x, int m) {
  std::vector<double> g;
  if (!d.shared_gate) return g;
  std::vector<float> row(d.hidden);
  router_row_host(d, seed, d.experts, row.data());
  g.resize(m);
  for (int t = 0; t < m; ++t) {
    double s = 0;
    const float* xt = x.data() + static_cast<std::size_t>(t) * d.hidden;
    for (int h = 0; h < d.hidden; ++h) s += static_cast<double>(xt[h]) * row[h];
    g[t] = 1.0 / (1.0 + std::exp(-s));
  }
  return g;
}

void scaled_input_row(const MoeDims& d, const float* x, float w, float* out) {
  for (int h = 0; h < d.hidden; ++h) out[h] = round_to_bf16(x[h] * w);
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
                            const std::vector<double>& weights, const double* gate) {
  const int slots = d.top_k + d.shared, H = d.hidden;
  std::vector<double> out(static_cast<std::size_t>(n) * H, 0.0);
  for (int t = 0; t < n; ++t)
    for (int s = 0; s < slots; ++s) {
      const double w = s < d.top_k ? (d.scale_input ? 1.0 : weights[t * d.top_k + s]) : (gate ? gate[t] : 1.0);
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
      for (int r = 0; r < rows; ++r) {
        const float* xr = x.data() + static_cast<std::size_t>(u[r].first) * H;
        float* dst = xs.data() + static_cast<std::size_t>(r) * H;
        if (d.scale_input && u[r].second < d.top_k)
          scaled_input_row(d, xr, static_cast<float>(weights[u[r].first * d.top_k + u[r].second]), dst);
        else
          std::copy_n(xr, H, dst);
      }
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
  const std::vector<double> gate = shared_gate(d, seed, x, n);
  return combine(d, n, y, weights, gate.empty() ? nullptr : gate.data());
}

}  // namespace moe::kernels::ref
