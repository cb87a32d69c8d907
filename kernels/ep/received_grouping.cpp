// The grouping kernel's reference: its index math (received_grouping.hpp) in sequence.
#include "kernels/ep/received_grouping.hpp"

#include <cstring>

#include "kernels/moe/forward.hpp"

namespace moe::kernels::ep {

ReceivedGrouping group_received_host(const WireGeometry& g, int local_experts, const unsigned char* recv,
                                     const int* stale_counts) {
  ReceivedGrouping r;
  const int K = g.top_k, E = local_experts;
  r.rows = received_batch_rows(g);
  r.top_k = K;
  const int pairs = r.rows * K;
  r.slot_expert.assign(pairs, -1);
  r.slot_weight.assign(pairs, 0.0f);
  // Records to slots.
  for (int s = 0; s < g.ranks; ++s) {
    const unsigned char* block = recv + g.dispatch_block_bytes * s;
    int header = 0;
    std::memcpy(&header, block, 4);
    const int count = valid_record_count(stale_counts ? stale_counts[s] : header, g.capacity);
    if (count < 0) r.status |= kBadCount;
    for (int rec = 0; rec < count; ++rec) {
      const unsigned char* at = block + g.header_bytes + g.dispatch_row_bytes * rec;
      std::vector<int> experts(K);
      std::memcpy(experts.data(), at + 4, 4 * static_cast<std::size_t>(K));
      const int t = received_token(s, rec, g.capacity);
      bool bad = false;
      for (int k = 0; k < K; ++k) {
        r.slot_expert[t * K + k] = slot_local_expert(experts.data(), k, E, &bad);
        std::memcpy(&r.slot_weight[t * K + k], at + 4 + 4 * static_cast<std::size_t>(K) + 4 * k, 4);
      }
      if (bad) r.status |= kBadExpert;
    }
  }
  // Membership words and their prefixes per expert.
  const int W = membership_words(r.rows);
  std::vector<std::uint32_t> bits(static_cast<std::size_t>(E) * W, 0u);
  for (int i = 0; i < pairs; ++i)
    if (const int e = r.slot_expert[i]; e >= 0) {
      const int t = i / K;
      bits[static_cast<std::size_t>(e) * W + t / 32] |= 1u << (t % 32);
    }
  std::vector<int> prefix(bits.size());
  r.counts.assign(E, 0);
  for (int e = 0; e < E; ++e)
    for (int w = 0; w < W; ++w) {
      prefix[static_cast<std::size_t>(e) * W + w] = r.counts[e];
      r.counts[e] += popcount32(bits[static_cast<std::size_t>(e) * W + w]);
    }
  // Experts in ascending order: offsets, the active list, the tiles.
  r.offsets.assign(E + 1, 0);
  r.active.assign(E, -1);
  for (int e = 0; e < E; ++e) {
    r.offsets[e + 1] = r.offsets[e] + r.counts[e];
    if (r.counts[e] > 0) r.active[r.num_active++] = e;
    for (int i = 0; i < tiles_of(r.counts[e], kTensorCoreTileRows); ++i)
      r.tiles.push_back({e, r.offsets[e] + i * kTensorCoreTileRows});
  }
  // Each pair's place.
  r.sorted_pairs.assign(pairs, -1);
  r.pair_position.assign(pairs, -1);
  for (int i = 0; i < pairs; ++i)
    if (const int e = r.slot_expert[i]; e >= 0) {
      const int t = i / K;
      const std::size_t word = static_cast<std::size_t>(e) * W + t / 32;
      const int pos = grouped_position(r.offsets[e], prefix[word], bits[word], t);
      r.sorted_pairs[pos] = i;
      r.pair_position[i] = pos;
    }
  return r;
}

}  // namespace moe::kernels::ep
