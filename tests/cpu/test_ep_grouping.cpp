// The grouped path's index math (kernels/ep/received_grouping.hpp): received records become
// the route stage's outputs of a batch of ranks * capacity tokens, exactly the grouping the
// sharded CPU reference runs its experts over (engine/ep/sharded_reference.hpp), and corrupt
// blocks or records are flagged and hold no pair.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/ep/dispatch_plan.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_layout.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/ep/received_grouping.hpp"
#include "kernels/moe/forward.hpp"

using namespace moe;
namespace kep = moe::kernels::ep;

namespace {

constexpr int kHidden = 32;

// Every rank's send blocks of a step with random routing (top-k distinct experts a token,
// random weights and rows), exchanged: the receive buffer of each rank.
std::vector<std::vector<unsigned char>> received_buffers(const ep::ExpertMap& map, int m, int top_k,
                                                         int capacity, std::mt19937& rng) {
  const int P = map.ranks(), E = map.experts();
  const ep::WireLayout L = ep::make_wire_layout(kHidden, top_k, P, capacity);
  std::vector<std::vector<unsigned char>> send(P, std::vector<unsigned char>(L.dispatch_bytes(), 0));
  for (int r = 0; r < P; ++r) {
    std::vector<int> ids;
    std::vector<double> weights;
    for (int t = 0; t < m; ++t) {
      std::vector<int> experts(E);
      for (int e = 0; e < E; ++e) experts[e] = e;
      std::shuffle(experts.begin(), experts.end(), rng);
      for (int k = 0; k < top_k; ++k) {
        ids.push_back(experts[k]);
        weights.push_back(static_cast<double>(rng() % 1000) / 1000.0);
      }
    }
    std::vector<float> x(static_cast<std::size_t>(m) * kHidden);
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 200) - 100) / 64.0f;
    const ep::DispatchPlan plan = ep::plan_dispatch(map, r, m, top_k, ids, capacity);
    ep::pack_dispatch_host(L, plan, x, weights, send[r].data());
  }
  std::vector<std::vector<unsigned char>> recv(P, std::vector<unsigned char>(L.dispatch_bytes()));
  for (int d = 0; d < P; ++d)
    for (int s = 0; s < P; ++s)
      std::memcpy(recv[d].data() + L.dispatch_block_bytes() * s, send[s].data() + L.dispatch_block_bytes() * d,
                  L.dispatch_block_bytes());
  return recv;
}

// The grouping of rank `self`'s receive buffer against the reference's: every output the
// expert GEMM stages read.
void check_against_reference(const ep::ExpertMap& map, int self, const ep::WireLayout& L,
                             const std::vector<unsigned char>& recv) {
  const int E = static_cast<int>(map.experts_of(self).size()), K = L.top_k;
  const kep::ReceivedGrouping g = kep::group_received_host(L.geometry(), E, recv.data());
  const std::vector<ep::ReceivedRow> rows = ep::unpack_received_host(L, recv.data());
  const auto users = ep::received_pairs_by_expert(rows);
  CHECK(g.status == 0u);
  REQUIRE(g.rows == L.ranks * L.capacity);
  REQUIRE(static_cast<int>(g.counts.size()) == E);
  REQUIRE(static_cast<int>(g.offsets.size()) == E + 1);
  // Active experts ascending, as the reference's map orders them, then -1.
  CHECK(g.num_active == static_cast<int>(users.size()));
  int a = 0;
  for (const auto& [e, pairs] : users) CHECK(g.active[a++] == e);
  for (; a < E; ++a) CHECK(g.active[a] == -1);
  // Per expert: its range, and in it the reference's (row, slot) pairs in the same order.
  CHECK(g.offsets[0] == 0);
  std::vector<bool> placed(g.sorted_pairs.size(), false);
  std::size_t tile = 0;
  for (int e = 0; e < E; ++e) {
    CAPTURE(e);
    const auto it = users.find(e);
    const int count = it == users.end() ? 0 : static_cast<int>(it->second.size());
    CHECK(g.counts[e] == count);
    CHECK(g.offsets[e + 1] - g.offsets[e] == count);
    for (int j = 0; j < count; ++j) {
      const auto [row, slot] = it->second[j];
      const int token = kep::received_token(rows[row].source, rows[row].record, L.capacity);
      const int pair = token * K + slot;
      CHECK(g.sorted_pairs[g.offsets[e] + j] == pair);
      CHECK(g.pair_position[pair] == g.offsets[e] + j);
      CHECK(g.slot_expert[pair] == e);
      placed[pair] = true;
    }
    // Tiles of kTensorCoreTileRows positions, in expert order.
    for (int first = 0; first < count; first += kernels::kTensorCoreTileRows, ++tile) {
      REQUIRE(tile < g.tiles.size());
      CHECK(g.tiles[tile] == std::array<int, 2>{e, g.offsets[e] + first});
    }
  }
  CHECK(tile == g.tiles.size());
  // Slots without a pair: no expert, no position; past the last pair the sorted list is -1.
  for (std::size_t i = 0; i < placed.size(); ++i)
    if (!placed[i]) {
      CHECK(g.slot_expert[i] == -1);
      CHECK(g.pair_position[i] == -1);
    }
  for (std::size_t i = g.offsets[E]; i < g.sorted_pairs.size(); ++i) CHECK(g.sorted_pairs[i] == -1);
  // Every record's slots and weights at its token.
  for (const ep::ReceivedRow& r : rows)
    for (int s = 0; s < K; ++s) {
      const int token = kep::received_token(r.source, r.record, L.capacity);
      CHECK(g.slot_weight[token * K + s] == r.weights[s]);
    }
}

unsigned char* record_at(std::vector<unsigned char>& recv, const ep::WireLayout& L, int source, int r) {
  return recv.data() + L.dispatch_block_bytes() * source + ep::WireLayout::kHeaderBytes + L.dispatch_row_bytes() * r;
}

}  // namespace

TEST_CASE("grouped rows: the received records' grouping is the sharded reference's") {
  std::mt19937 rng(20261202);
  for (int P : {1, 2, 3, 4})
    for (int m : {1, 5, 100})  // 100: experts with more than one tensor-core tile of pairs
      for (int spare : {0, 3}) {  // capacity above the tokens: places without a record
        CAPTURE(P);
        CAPTURE(m);
        CAPTURE(spare);
        const int E = 10, K = 3;
        const ep::ExpertMap map = ep::ExpertMap::contiguous(E, P);
        const ep::WireLayout L = ep::make_wire_layout(kHidden, K, P, m + spare);
        const auto recv = received_buffers(map, m, K, m + spare, rng);
        for (int self = 0; self < P; ++self) {
          CAPTURE(self);
          check_against_reference(map, self, L, recv[self]);
        }
      }
}

TEST_CASE("grouped rows: a token's places and the batch's scratch") {
  CHECK(kep::received_token(0, 0, 8) == 0);
  CHECK(kep::received_token(2, 3, 8) == 19);
  CHECK(kep::valid_record_count(0, 4) == 0);
  CHECK(kep::valid_record_count(4, 4) == 4);
  CHECK(kep::valid_record_count(5, 4) == -1);
  CHECK(kep::valid_record_count(-1, 4) == -1);
  // Token 37 is bit 5 of word 1: the expert's offset, its tokens in word 0, those below bit 5
  // (four of 0b101111; bit 5 is the token itself).
  CHECK(kep::grouped_position(10, 7, 0b101111u, 37) == 10 + 7 + 4);
  CHECK(kep::grouped_position(10, 7, 0b100000u, 37) == 17);
  CHECK(kep::tiles_of(0, 64) == 0);
  CHECK(kep::tiles_of(64, 64) == 1);
  CHECK(kep::tiles_of(65, 64) == 2);

  kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 64;
  d.shared = 2;
  d.top_k = 6;
  d.routed_scaling = 2.5f;
  d.topk_method = kernels::TopKMethod::group_limited_greedy;
  const ep::WireLayout L = ep::make_wire_layout(d.hidden, d.top_k, 4, 8);
  const kep::GroupedRowsLayout l = kep::grouped_rows_layout(d, L.geometry(), 16);
  CHECK(l.rows == 32);
  CHECK(l.batch.experts == 16);
  CHECK(l.batch.shared == 0);
  CHECK(l.batch.top_k == 6);
  CHECK(l.batch.plain_routing());  // the records carry the routing
  CHECK(l.forward.m == 32);
  CHECK(l.forward.pairs == 32 * 6);
  CHECK(l.x % 256 == 0);
  CHECK(l.x >= l.forward.total);
  CHECK(l.total >= l.x + std::size_t{2} * 32 * 256);
}

TEST_CASE("grouped rows: an impossible count or expert is flagged and holds no pair") {
  std::mt19937 rng(7);
  const int E = 8, K = 2, P = 2, m = 6;
  const ep::ExpertMap map = ep::ExpertMap::contiguous(E, P);  // 4 experts a rank
  const ep::WireLayout L = ep::make_wire_layout(kHidden, K, P, m);
  const kep::WireGeometry g = L.geometry();
  const std::vector<unsigned char> clean = received_buffers(map, m, K, m, rng)[0];
  int count1 = 0;
  std::memcpy(&count1, clean.data() + L.dispatch_block_bytes(), 4);
  REQUIRE(count1 > 0);
  const kep::ReceivedGrouping base = kep::group_received_host(g, 4, clean.data());
  REQUIRE(base.status == 0u);
  auto pairs_of_block = [&](const kep::ReceivedGrouping& r, int s) {
    int n = 0;
    for (int t = s * m; t < (s + 1) * m; ++t)
      for (int k = 0; k < K; ++k) n += r.pair_position[t * K + k] >= 0;
    return n;
  };
  REQUIRE(pairs_of_block(base, 1) > 0);

  SUBCASE("a count over the capacity: kBadCount, the block holds nothing, the other is intact") {
    auto recv = clean;
    const int over = m + 1;
    std::memcpy(recv.data() + L.dispatch_block_bytes(), &over, 4);
    const kep::ReceivedGrouping r = kep::group_received_host(g, 4, recv.data());
    CHECK((r.status & kep::kBadCount) != 0u);
    CHECK(pairs_of_block(r, 1) == 0);
    CHECK(pairs_of_block(r, 0) == pairs_of_block(base, 0));
    CHECK(r.offsets.back() == pairs_of_block(base, 0));
  }
  SUBCASE("an expert outside the bank, or repeated in a record: kBadExpert, that slot no pair") {
    auto recv = clean;
    int slots[2] = {4, 1};  // local expert 4 of a bank of 4
    std::memcpy(record_at(recv, L, 1, 0) + ep::WireLayout::experts_offset(), slots, sizeof slots);
    kep::ReceivedGrouping r = kep::group_received_host(g, 4, recv.data());
    CHECK((r.status & kep::kBadExpert) != 0u);
    CHECK(r.slot_expert[m * K + 0] == -1);
    CHECK(r.slot_expert[m * K + 1] == 1);
    int twice[2] = {2, 2};
    std::memcpy(record_at(recv, L, 1, 0) + ep::WireLayout::experts_offset(), twice, sizeof twice);
    r = kep::group_received_host(g, 4, recv.data());
    CHECK((r.status & kep::kBadExpert) != 0u);
    CHECK(r.slot_expert[m * K + 0] == 2);
    CHECK(r.slot_expert[m * K + 1] == -1);
    CHECK(r.pair_position[m * K + 1] == -1);
  }
  SUBCASE("stale counts (mutation ep-reuse-counts) are what the grouping then follows") {
    const int stale[2] = {0, count1};
    const kep::ReceivedGrouping r = kep::group_received_host(g, 4, clean.data(), stale);
    CHECK(r.status == 0u);
    CHECK(pairs_of_block(r, 0) == 0);
    CHECK(pairs_of_block(r, 1) == pairs_of_block(base, 1));
  }
}
