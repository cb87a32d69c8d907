#include "engine/ep/sharded_reference.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <thread>

#include "common/errors.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/reference.hpp"

namespace moe::ep {

namespace kr = kernels::ref;

void pack_dispatch_host(const WireLayout& L, const DispatchPlan& plan,
                        const std::vector<float>& x, const std::vector<double>& weights,
                        unsigned char* send) {
  for (int d = 0; d < plan.ranks; ++d) {
    unsigned char* block = send + L.dispatch_block_bytes() * d;
    const std::int32_t count = plan.counts[d];
    std::memset(block, 0, WireLayout::kHeaderBytes);
    std::memcpy(block, &count, 4);
    for (int r = 0; r < count; ++r) {
      const int row = plan.offsets[d] + r, t = plan.tokens[row];
      unsigned char* rec = block + WireLayout::kHeaderBytes + L.dispatch_row_bytes() * r;
      const std::int32_t token = t;
      std::memcpy(rec + WireLayout::token_offset(), &token, 4);
      for (int s = 0; s < L.top_k; ++s) {
        const std::int32_t e = plan.slot_expert[static_cast<std::size_t>(row) * L.top_k + s];
        const float w = static_cast<float>(weights[static_cast<std::size_t>(t) * L.top_k + s]);
        std::memcpy(rec + WireLayout::experts_offset() + 4 * s, &e, 4);
        std::memcpy(rec + L.weights_offset() + 4 * s, &w, 4);
      }
      for (int h = 0; h < L.hidden; ++h) {
        const std::uint16_t b =
            kernels::float_to_bf16_bits(x[static_cast<std::size_t>(t) * L.hidden + h]);
        std::memcpy(rec + L.hidden_offset() + 2 * h, &b, 2);
      }
    }
  }
}

std::vector<ReceivedRow> unpack_received_host(const WireLayout& L, const unsigned char* recv) {
  std::vector<ReceivedRow> rows;
  for (int s = 0; s < L.ranks; ++s) {
    const unsigned char* block = recv + L.dispatch_block_bytes() * s;
    std::int32_t count = 0;
    std::memcpy(&count, block, 4);
    if (count < 0 || count > L.capacity)
      throw Error(ExitCode::probe_error, "receive block from rank " + std::to_string(s) +
                                             " claims " + std::to_string(count) +
                                             " rows, outside 0.." + std::to_string(L.capacity));
    for (int r = 0; r < count; ++r) {
      const unsigned char* rec = block + WireLayout::kHeaderBytes + L.dispatch_row_bytes() * r;
      ReceivedRow row;
      row.source = s;
      row.record = r;
      std::memcpy(&row.token, rec + WireLayout::token_offset(), 4);
      row.experts.resize(L.top_k);
      row.weights.resize(L.top_k);
      std::memcpy(row.experts.data(), rec + WireLayout::experts_offset(), 4 * L.top_k);
      std::memcpy(row.weights.data(), rec + L.weights_offset(), 4 * L.top_k);
      row.hidden.resize(L.hidden);
      for (int h = 0; h < L.hidden; ++h) {
        std::uint16_t b = 0;
        std::memcpy(&b, rec + L.hidden_offset() + 2 * h, 2);
        row.hidden[h] = kernels::bf16_bits_to_float(b);
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

namespace {

// Runs work(i) for i in [0, n) on up to `threads` threads.
template <class F>
void parallel_for(int n, int threads, F work) {
  unsigned nt = threads > 0 ? static_cast<unsigned>(threads)
                            : std::max(1u, std::thread::hardware_concurrency());
  nt = std::min<unsigned>(nt, static_cast<unsigned>(std::max(n, 1)));
  if (nt <= 1) {
    for (int i = 0; i < n; ++i) work(i);
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < nt; ++k)
    pool.emplace_back([&, k] {
      for (int i = static_cast<int>(k); i < n; i += static_cast<int>(nt)) work(i);
    });
  for (auto& th : pool) th.join();
}

// y [rows, H] of one expert for the given input rows.
std::vector<double> run_expert(const kernels::MoeDims& d, std::uint64_t seed, int expert,
                               const std::vector<float>& xs, int rows) {
  std::vector<float> h(static_cast<std::size_t>(rows) * d.inter);
  std::vector<double> y(static_cast<std::size_t>(rows) * d.hidden);
  kr::expert_gate_up(d, seed, expert, xs.data(), rows, h.data());
  kr::expert_down(d, seed, expert, h.data(), rows, y.data());
  return y;
}

}  // namespace

std::map<int, std::vector<std::pair<int, int>>> received_pairs_by_expert(const std::vector<ReceivedRow>& rows) {
  std::map<int, std::vector<std::pair<int, int>>> users;  // local expert -> (row, slot)
  for (int r = 0; r < static_cast<int>(rows.size()); ++r)
    for (int s = 0; s < static_cast<int>(rows[r].experts.size()); ++s)
      if (rows[r].experts[s] >= 0) users[rows[r].experts[s]].push_back({r, s});
  return users;
}

std::vector<double> expert_partials_host(const kernels::MoeDims& d, std::uint64_t seed, const ExpertMap& map,
                                         int self, const std::vector<ReceivedRow>& rows, int threads) {
  const int H = d.hidden, K = d.top_k, n = static_cast<int>(rows.size());
  const std::map<int, std::vector<std::pair<int, int>>> users = received_pairs_by_expert(rows);
  std::vector<int> locals;
  for (const auto& kv : users) locals.push_back(kv.first);
  std::vector<double> y(static_cast<std::size_t>(n) * K * H, 0.0);  // per (row, slot)
  parallel_for(static_cast<int>(locals.size()), threads, [&](int i) {
    const int local = locals[i];
    if (local >= static_cast<int>(map.experts_of(self).size()))
      throw Error(ExitCode::probe_error, "rank " + std::to_string(self) + " received local expert " +
                                             std::to_string(local) + " it does not own");
    const auto& u = users.at(local);
    std::vector<float> xs(u.size() * H);
    for (std::size_t j = 0; j < u.size(); ++j)
      std::copy_n(rows[u[j].first].hidden.data(), H, xs.data() + j * H);
    const std::vector<double> ye =
        run_expert(d, seed, map.experts_of(self)[local], xs, static_cast<int>(u.size()));
    for (std::size_t j = 0; j < u.size(); ++j)
      std::copy_n(ye.data() + j * H, H,
                  y.data() + (static_cast<std::size_t>(u[j].first) * K + u[j].second) * H);
  });
  std::vector<double> partial(static_cast<std::size_t>(n) * H, 0.0);
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < K; ++s) {
      if (rows[r].experts[s] < 0) continue;
      const double w = rows[r].weights[s];
      const double* ys = y.data() + (static_cast<std::size_t>(r) * K + s) * H;
      for (int h = 0; h < H; ++h) partial[static_cast<std::size_t>(r) * H + h] += w * ys[h];
    }
  return partial;
}

ShardedStep sharded_step_reference(const kernels::MoeDims& d, std::uint64_t seed,
                                   const ExpertMap& map, const std::vector<std::vector<float>>& x,
                                   int m, int capacity, int threads) {
  const int P = map.ranks(), H = d.hidden, K = d.top_k;
  if (static_cast<int>(x.size()) != P)
    throw UsageError("sharded reference: " + std::to_string(x.size()) + " token sets for " +
                     std::to_string(P) + " ranks");
  if (map.experts() != d.experts)
    throw UsageError("sharded reference: the map has " + std::to_string(map.experts()) +
                     " experts, the layer " + std::to_string(d.experts));
  const WireLayout L = make_wire_layout(H, K, P, capacity);
  ShardedStep step;
  step.out.resize(P);
  step.ids.resize(P);
  step.weights.resize(P);
  // 1. Route and pack (every rank).
  std::vector<std::vector<unsigned char>> send(P, std::vector<unsigned char>(L.dispatch_bytes()));
  for (int r = 0; r < P; ++r) {
    const std::vector<double> logits = kr::router_logits(d, seed, x[r], m, nullptr);
    step.ids[r].resize(static_cast<std::size_t>(m) * K);
    step.weights[r].resize(static_cast<std::size_t>(m) * K);
    for (int t = 0; t < m; ++t)
      kr::route_token(d, logits.data() + static_cast<std::size_t>(t) * d.experts,
                      step.ids[r].data() + static_cast<std::size_t>(t) * K,
                      step.weights[r].data() + static_cast<std::size_t>(t) * K);
    step.plans.push_back(plan_dispatch(map, r, m, K, step.ids[r], capacity));
    pack_dispatch_host(L, step.plans[r], x[r], step.weights[r], send[r].data());
  }
  // 2. Exchange: receive block s of rank d is send block d of rank s.
  std::vector<std::vector<double>> returned(P);  // per destination rank: partials as received
  for (int dst = 0; dst < P; ++dst) {
    std::vector<unsigned char> recv(L.dispatch_bytes());
    for (int s = 0; s < P; ++s)
      std::memcpy(recv.data() + L.dispatch_block_bytes() * s,
                  send[s].data() + L.dispatch_block_bytes() * dst, L.dispatch_block_bytes());
    const std::vector<ReceivedRow> rows = unpack_received_host(L, recv.data());
    step.received_rows.push_back(static_cast<int>(rows.size()));
    step.wire_bytes += rows.size() * (L.dispatch_row_bytes() + L.combine_row_bytes()) +
                       P * 2 * WireLayout::kHeaderBytes;
    // 3. Expert compute on the received rows.
    returned[dst] = expert_partials_host(d, seed, map, dst, rows, threads);
  }
  // 4. Combine on each source: partials in destination-rank order, then shared experts.
  for (int r = 0; r < P; ++r) {
    std::vector<double>& out = step.out[r];
    out.assign(static_cast<std::size_t>(m) * H, 0.0);
    const DispatchPlan& plan = step.plans[r];
    // Row j of destination d's returned partials from source r: rows arrive in source order,
    // so they start after the counts of lower sources.
    for (int dst = 0; dst < P; ++dst) {
      std::size_t first = 0;
      for (int s = 0; s < r; ++s) first += step.plans[s].counts[dst];
      for (int j = 0; j < plan.counts[dst]; ++j) {
        const int t = plan.tokens[plan.offsets[dst] + j];
        const double* p = returned[dst].data() + (first + j) * H;
        for (int h = 0; h < H; ++h) out[static_cast<std::size_t>(t) * H + h] += p[h];
      }
    }
    for (int s = 0; s < d.shared; ++s) {
      const std::vector<double> ys = run_expert(d, seed, d.experts + s, x[r], m);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += ys[i];
    }
  }
  return step;
}

}  // namespace moe::ep
