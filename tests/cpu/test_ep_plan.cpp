// Expert parallelism on the CPU: the expert map (blocks, uneven counts, refusals), the dispatch
// plan (rows, offsets, capacity and its overflow error), the wire layout, and the sharded step
// over P virtual ranks against the single-device reference; a rank's output check; --devices.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/ep/device_list.hpp"
#include "engine/ep/dispatch_plan.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/rank_output_check.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_layout.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/reference.hpp"

using namespace moe;
using namespace moe::ep;

namespace {

kernels::MoeDims small_dims(int experts, int shared, int top_k) {
  kernels::MoeDims d;
  d.hidden = 64;
  d.inter = 32;
  d.experts = experts;
  d.shared = shared;
  d.top_k = top_k;
  return d;
}

// Rank r's tokens are global tokens r*m .. r*m+m-1 of the generator's input stream.
std::vector<std::vector<float>> rank_inputs(const kernels::MoeDims& d, std::uint64_t seed, int P,
                                            int m) {
  std::vector<std::vector<float>> x(P, std::vector<float>(static_cast<std::size_t>(m) * d.hidden));
  for (int r = 0; r < P; ++r)
    for (int t = 0; t < m; ++t)
      kernels::input_row_host(d, seed, r * m + t, x[r].data() + static_cast<std::size_t>(t) * d.hidden);
  return x;
}

}  // namespace

TEST_CASE("contiguous expert map: blocks in rank order, the first E mod P ranks one more") {
  const ExpertMap even = ExpertMap::contiguous(8, 4);
  for (int e = 0; e < 8; ++e) {
    CHECK(even.owner(e) == e / 2);
    CHECK(even.local_index(e) == e % 2);
  }
  const ExpertMap uneven = ExpertMap::contiguous(10, 4);  // 3, 3, 2, 2
  CHECK(uneven.experts_of(0) == std::vector<int>{0, 1, 2});
  CHECK(uneven.experts_of(1) == std::vector<int>{3, 4, 5});
  CHECK(uneven.experts_of(2) == std::vector<int>{6, 7});
  CHECK(uneven.experts_of(3) == std::vector<int>{8, 9});
  CHECK(uneven.describe() == "contiguous: 10 experts over 4 ranks (3, 3, 2, 2)");
  int total = 0;
  for (int r = 0; r < 4; ++r) total += static_cast<int>(uneven.experts_of(r).size());
  CHECK(total == 10);
  // Every real shape's experts over 2..8 ranks: each expert owned once, blocks differ by <= 1.
  for (int E : {64, 128, 256, 160})
    for (int P = 1; P <= 8; ++P) {
      const ExpertMap m = ExpertMap::contiguous(E, P);
      std::set<int> seen;
      std::size_t lo = E, hi = 0;
      for (int r = 0; r < P; ++r) {
        for (int e : m.experts_of(r)) CHECK(seen.insert(e).second);
        lo = std::min(lo, m.experts_of(r).size());
        hi = std::max(hi, m.experts_of(r).size());
      }
      CHECK(static_cast<int>(seen.size()) == E);
      CHECK(hi - lo <= 1);
    }
}

TEST_CASE("expert map refusals name the problem") {
  CHECK_THROWS_WITH_AS(ExpertMap::contiguous(4, 5), doctest::Contains("5 ranks for 4 routed experts"),
                       UsageError);
  CHECK_THROWS_AS(ExpertMap::contiguous(4, 0), UsageError);
  CHECK_THROWS_WITH_AS(ExpertMap::from_owners({0, 0, 2, 2}, 3), doctest::Contains("rank 1 owns no expert"),
                       UsageError);
  CHECK_THROWS_WITH_AS(ExpertMap::from_owners({0, 3}, 2), doctest::Contains("outside 0..1"), UsageError);
}

TEST_CASE("map fingerprints tell maps apart") {
  CHECK(ExpertMap::contiguous(8, 2).fingerprint() == ExpertMap::contiguous(8, 2).fingerprint());
  CHECK(ExpertMap::contiguous(8, 2).fingerprint() != ExpertMap::contiguous(8, 4).fingerprint());
  // Same block sizes, different owners.
  const ExpertMap swapped = ExpertMap::from_owners({1, 1, 1, 1, 0, 0, 0, 0}, 2);
  CHECK(swapped.fingerprint() != ExpertMap::contiguous(8, 2).fingerprint());
  CHECK_FALSE(swapped == ExpertMap::contiguous(8, 2));
}

TEST_CASE("dispatch plan: rows per destination in token order, each token once per rank") {
  const ExpertMap map = ExpertMap::contiguous(8, 4);  // rank r owns 2r, 2r+1
  // 3 tokens, top-2.
  const std::vector<int> ids{0, 1,   // token 0: both on rank 0 -> one row
                             1, 6,   // token 1: ranks 0 and 3
                             5, 4};  // token 2: rank 2 twice -> one row
  const DispatchPlan p = plan_dispatch(map, 0, 3, 2, ids, 3);
  CHECK(p.counts == std::vector<int>{2, 0, 1, 1});
  CHECK(p.offsets == std::vector<int>{0, 2, 2, 3, 4});
  CHECK(p.tokens == std::vector<int>{0, 1, 2, 1});
  // Local expert per slot, -1 where the destination does not own the slot's expert.
  CHECK(p.slot_expert == std::vector<int>{0, 1,  1, -1,  1, 0,  -1, 0});
  CHECK(p.rows() == 4);
}

TEST_CASE("dispatch plan: over capacity is refused naming the ranks, rows and capacity") {
  const ExpertMap map = ExpertMap::contiguous(4, 2);
  const std::vector<int> ids{0, 1, 1, 0, 0, 1};  // 3 tokens all on rank 0
  CHECK_NOTHROW(plan_dispatch(map, 1, 3, 2, ids, 3));
  CHECK_THROWS_WITH_AS(plan_dispatch(map, 1, 3, 2, ids, 2),
                       "dispatch: rank 1 would send 3 rows to rank 0, over the capacity of 2 rows "
                       "per destination (raise the capacity to the tokens per rank, or send fewer "
                       "tokens)",
                       CapacityOverflow);
  CHECK_THROWS_WITH_AS(plan_dispatch(map, 0, 1, 2, {0, 9}, 2), doctest::Contains("expert 9"),
                       UsageError);
  // Capacity = tokens never overflows, whatever the routing.
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int> r(16 * 2);
    for (int& e : r) e = static_cast<int>(rng() % 4);
    CHECK_NOTHROW(plan_dispatch(map, 0, 16, 2, r, 16));
  }
}

TEST_CASE("wire layout: 16-byte records, counts in the block header") {
  const WireLayout L = make_wire_layout(7168, 8, 8, 128);
  CHECK(L.meta_bytes() == 80);  // 4 + 64 -> 80
  CHECK(L.dispatch_row_bytes() == 80 + 2 * 7168);
  CHECK(L.dispatch_block_bytes() == 16 + 128 * (80 + 2 * 7168));
  CHECK(L.combine_row_bytes() == 4 * 7168);
  CHECK(L.dispatch_row_bytes() % 16 == 0);
  CHECK(L.weights_offset() == 36);
  CHECK_THROWS_AS(make_wire_layout(64, 2, 2, 0), UsageError);
}

TEST_CASE("pack and unpack round-trip one rank's rows through the wire bytes") {
  const kernels::MoeDims d = small_dims(8, 0, 2);
  const ExpertMap map = ExpertMap::contiguous(8, 2);
  const std::vector<int> ids{0, 5, 6, 7, 1, 2};
  const std::vector<double> w{0.75, 0.25, 0.5, 0.5, 0.125, 0.875};
  const auto x = rank_inputs(d, 11, 1, 3)[0];
  const DispatchPlan p = plan_dispatch(map, 0, 3, 2, ids, 3);
  const WireLayout L = make_wire_layout(d.hidden, 2, 2, 3);
  std::vector<unsigned char> send(L.dispatch_bytes(), 0xAB);  // poisoned
  pack_dispatch_host(L, p, x, w, send.data());
  // Rank 0's view when it is both sides: its receive buffer is its own send buffer here.
  const std::vector<ReceivedRow> rows = unpack_received_host(L, send.data());
  REQUIRE(static_cast<int>(rows.size()) == p.rows());
  for (int i = 0; i < p.rows(); ++i) {
    const int t = p.tokens[i];
    CHECK(rows[i].token == t);
    CHECK(rows[i].source == (i < p.counts[0] ? 0 : 1));  // block index
    for (int s = 0; s < 2; ++s) {
      CHECK(rows[i].experts[s] == p.slot_expert[i * 2 + s]);
      CHECK(rows[i].weights[s] == static_cast<float>(w[t * 2 + s]));
    }
    for (int h = 0; h < d.hidden; ++h) CHECK(rows[i].hidden[h] == x[t * d.hidden + h]);
  }
  // A corrupt count is caught, not read past the block.
  const std::int32_t bad = 4;
  std::memcpy(send.data(), &bad, 4);
  CHECK_THROWS_WITH(unpack_received_host(L, send.data()), doctest::Contains("claims 4 rows"));
}

TEST_CASE("sharded step over P virtual ranks equals the single-device reference") {
  const std::uint64_t seed = 1234;
  for (int P : {1, 2, 3, 4}) {
    for (int shared : {0, 1}) {
      const kernels::MoeDims d = small_dims(10, shared, 3);  // 10 experts: uneven over 3 and 4
      const int m = 5;
      CAPTURE(P);
      CAPTURE(shared);
      const ExpertMap map = ExpertMap::contiguous(d.experts, P);
      const auto x = rank_inputs(d, seed, P, m);
      const ShardedStep step = sharded_step_reference(d, seed, map, x, m, m, 1);
      // The single device: all P*m tokens, routed by the reference, weights rounded to float as
      // they cross the link.
      std::vector<float> all;
      for (const auto& xr : x) all.insert(all.end(), xr.begin(), xr.end());
      const int n = P * m;
      const std::vector<double> logits = kernels::ref::router_logits(d, seed, all, n, nullptr);
      std::vector<int> ids(n * d.top_k);
      std::vector<double> w(n * d.top_k);
      for (int t = 0; t < n; ++t)
        kernels::ref::route_token(d, logits.data() + t * d.experts, ids.data() + t * d.top_k,
                                  w.data() + t * d.top_k);
      for (double& v : w) v = static_cast<float>(v);
      const std::vector<double> single = kernels::ref::moe_layer(d, seed, all, n, ids, w, 1);
      double max_abs = 0, max_diff = 0;
      for (int r = 0; r < P; ++r) {
        CHECK(std::equal(step.ids[r].begin(), step.ids[r].end(), ids.begin() + r * m * d.top_k));
        for (int i = 0; i < m * d.hidden; ++i) {
          const double a = step.out[r][i], b = single[static_cast<std::size_t>(r) * m * d.hidden + i];
          max_abs = std::max(max_abs, std::abs(b));
          max_diff = std::max(max_diff, std::abs(a - b));
          if (P == 1) REQUIRE(a == b);  // one rank: the same summation order, bit for bit
        }
      }
      REQUIRE(max_abs > 0);
      CHECK(max_diff <= 1e-12 * max_abs);  // P > 1 only reorders float64 sums
      int received = 0;
      for (int r = 0; r < P; ++r) received += step.received_rows[r];
      int planned = 0;
      for (const auto& p : step.plans) planned += p.rows();
      CHECK(received == planned);
    }
  }
}

TEST_CASE("sharded step: a mismatched map or over-capacity tokens are refused") {
  const kernels::MoeDims d = small_dims(8, 0, 2);
  const auto x = rank_inputs(d, 5, 2, 4);
  CHECK_THROWS_AS(sharded_step_reference(d, 5, ExpertMap::contiguous(8, 3), x, 4, 4, 1), UsageError);
  CHECK_THROWS_AS(sharded_step_reference(d, 5, ExpertMap::contiguous(8, 2), x, 4, 1, 1),
                  CapacityOverflow);
}

TEST_CASE("a rank's output check passes the sharded reference and fails another rank's tokens") {
  const kernels::MoeDims d = small_dims(8, 1, 2);
  const int P = 2, m = 6;
  const auto x = rank_inputs(d, 21, P, m);
  const ShardedStep step = sharded_step_reference(d, 21, ExpertMap::contiguous(8, P), x, m, m, 1);
  for (int r = 0; r < P; ++r) {
    std::vector<float> out(step.out[r].size());
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = kernels::round_to_bf16(static_cast<float>(step.out[r][i]));  // as the GPU stores it
    const RankOutputCheck ok = check_rank_output(d, 21, x[r], out, m, m);
    CHECK(ok.passed);
    CHECK(ok.tokens_checked + ok.near_ties_skipped == m);
    CHECK(ok.rel_l2 < 1e-2);
  }
  // Rank 1's outputs presented as rank 0's (rows for the wrong tokens): far outside the bound.
  std::vector<float> wrong(step.out[1].begin(), step.out[1].end());
  const RankOutputCheck bad = check_rank_output(d, 21, x[0], wrong, m, m);
  CHECK_FALSE(bad.passed);
  CHECK(bad.rel_l2 > 0.1);
}

TEST_CASE("--devices: indices or all; a missing GPU or a single one is refused in one line") {
  CHECK(parse_device_list("").empty());
  CHECK(parse_device_list("all").empty());
  CHECK(parse_device_list("0,1,3") == std::vector<int>{0, 1, 3});
  CHECK_THROWS_WITH_AS(parse_device_list("0,,1"), "--devices '0,,1': '' is not a GPU index (give indices like 0,1 or 'all')",
                       UsageError);
  CHECK_THROWS_WITH_AS(parse_device_list("1,1"), "--devices '1,1': GPU 1 is named twice", UsageError);
  CHECK_THROWS_AS(parse_device_list("x"), UsageError);
  CHECK(resolve_devices({}, 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(resolve_devices({2, 0}, 4) == std::vector<int>{2, 0});
  CHECK_THROWS_WITH_AS(resolve_devices({0, 2}, 2), "--devices names GPU 2 but this machine has 2 (0..1)",
                       EnvironmentError);
  CHECK_THROWS_WITH_AS(resolve_devices({0}, 0), "--devices names GPU 0 but this machine has none",
                       EnvironmentError);
  CHECK_THROWS_WITH_AS(resolve_devices({}, 1),
                       "expert parallelism needs at least two GPUs; 1 visible", EnvironmentError);
}
