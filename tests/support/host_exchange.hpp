#pragma once
// One dispatch of P ranks on the host, through the same wire bytes as the GPU: every rank
// routes its m tokens to top_k distinct experts (a seeded generator), plans and packs its send
// buffer with rank-coded rows, and receive block s of rank d is send block d of rank s.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/ep/dispatch_plan.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/rank_coded_payload.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_layout.hpp"

namespace moe::test {

struct HostExchange {
  ep::WireLayout layout;
  ep::ExpertMap map;
  std::vector<std::vector<int>> ids;                // per rank [m, top_k] global experts
  std::vector<std::vector<unsigned char>> send, recv;  // per rank, layout.dispatch_bytes()
};

inline HostExchange host_exchange(int ranks, int experts, int top_k, int m, int hidden, std::uint32_t seed) {
  HostExchange x{ep::make_wire_layout(hidden, top_k, ranks, m), ep::ExpertMap::contiguous(experts, ranks), {}, {}, {}};
  std::mt19937 gen(seed);
  const std::size_t bytes = x.layout.dispatch_bytes();
  for (int r = 0; r < ranks; ++r) {
    std::vector<int> ids;
    std::vector<double> weights;
    for (int t = 0; t < m; ++t) {
      std::vector<int> pool(experts);
      for (int e = 0; e < experts; ++e) pool[e] = e;
      std::shuffle(pool.begin(), pool.end(), gen);
      for (int k = 0; k < top_k; ++k) {
        ids.push_back(pool[k]);
        weights.push_back(0.125 * (k + 1));
      }
    }
    const ep::DispatchPlan plan = ep::plan_dispatch(x.map, r, m, top_k, ids, m);
    // Bytes past the valid records stay as the allocator left them: a pattern here.
    std::vector<unsigned char> send(bytes, static_cast<unsigned char>(0xA5 + r));
    ep::pack_dispatch_host(x.layout, plan, ep::rank_coded_rows(r, m, hidden), weights, send.data());
    x.ids.push_back(std::move(ids));
    x.send.push_back(std::move(send));
  }
  const std::size_t block = x.layout.dispatch_block_bytes();
  for (int d = 0; d < ranks; ++d) {
    std::vector<unsigned char> recv(bytes);
    for (int s = 0; s < ranks; ++s) std::memcpy(recv.data() + block * s, x.send[s].data() + block * d, block);
    x.recv.push_back(std::move(recv));
  }
  return x;
}

inline void set_count(const ep::WireLayout& L, std::vector<unsigned char>& buffer, int block, std::int32_t count) {
  std::memcpy(buffer.data() + L.dispatch_block_bytes() * block, &count, 4);
}
inline std::int32_t count_of(const ep::WireLayout& L, const std::vector<unsigned char>& buffer, int block) {
  std::int32_t c = 0;
  std::memcpy(&c, buffer.data() + L.dispatch_block_bytes() * block, 4);
  return c;
}
inline unsigned char* record_of(const ep::WireLayout& L, std::vector<unsigned char>& buffer, int block, int record) {
  return buffer.data() + L.dispatch_block_bytes() * block + ep::WireLayout::kHeaderBytes +
         L.dispatch_row_bytes() * record;
}

}  // namespace moe::test
