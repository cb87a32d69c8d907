#pragma once
// How an expert-parallel rank's received records become a batch the expert GEMM stages run on
// (kernels/moe/forward_stages.hpp), as the route stage groups a device's own tokens
// (ScratchLayout): record r of receive block s is token s * capacity + r of a batch of
// ranks * capacity rows (a fixed place, whatever the counts, so the step stays capturable),
// its input row the record's hidden row, its pairs (token * top_k + slot) the slots whose
// expert this rank owns. Pairs are grouped by local expert in ascending order and keep pair
// order inside an expert; a token holds at most one pair of an expert, so a pair's rank in its
// expert is the number of earlier tokens in the expert's membership bitmask.
//
// The functions marked MOE_HD are the index math the grouping kernel (grouped_rows.cu) runs;
// group_received_host runs them in sequence on the same wire bytes, the kernel's reference
// (CPU-tested against the sharded CPU reference's grouping, sharded_reference.hpp).
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/ep/ep_kernels.hpp"
#include "kernels/moe/host_device.hpp"
#include "kernels/moe/route_grouping_map.hpp"

namespace moe::kernels::ep {

// Tokens of the batch: one place per record of every receive block.
MOE_HD int received_batch_rows(const WireGeometry& g) { return g.ranks * g.capacity; }

// The batch token of record `record` of the block from rank `source`.
MOE_HD int received_token(int source, int record, int capacity) { return source * capacity + record; }

// A block's meaningful records: its header count, or -1 when the count is impossible (outside
// 0..capacity: kBadCount, and the block holds no pair).
MOE_HD int valid_record_count(int count, int capacity) { return count < 0 || count > capacity ? -1 : count; }

// The pair's expert of slot `slot` of a record whose slots hold `experts` [top_k]: the local
// expert, or -1 (no pair) for a slot of another rank (negative on the wire). An expert outside
// the bank, or one an earlier slot of the record already holds (a token picks an expert once;
// a repeat would take a second place in that expert's range), is impossible: -1, and *bad set.
MOE_HD int slot_local_expert(const int* experts, int slot, int local_experts, bool* bad) {
  const int e = experts[slot];
  if (e < 0) return -1;
  if (e >= local_experts) {
    *bad = true;
    return -1;
  }
  for (int j = 0; j < slot; ++j)
    if (experts[j] == e) {
      *bad = true;
      return -1;
    }
  return e;
}

// Membership words of the batch: 32 tokens a word.
MOE_HD int membership_words(int rows) { return (rows + 31) / 32; }

// Sorted position of token t's pair of an expert, as the route places it.
using kernels::grouped_position;

// Tensor-core tiles of an expert with `pairs` pairs (kTensorCoreTileRows a tile).
MOE_HD int tiles_of(int pairs, int tile_rows) { return (pairs + tile_rows - 1) / tile_rows; }

// What the grouping writes, in the route stage's terms (ScratchLayout of the batch's dims: E
// the local experts, no shared ones, top_k slots a token).
struct ReceivedGrouping {
  int rows = 0;                    // ranks * capacity
  int top_k = 0;
  std::vector<int> slot_expert;    // [rows, top_k]: local expert, or -1 (no pair)
  std::vector<float> slot_weight;  // [rows, top_k]: the slot's weight (0 where no record)
  std::vector<int> counts;         // [E]: pairs of each local expert
  std::vector<int> offsets;        // [E + 1]: first position of each expert's pairs, then the total
  std::vector<int> active;         // [E]: experts with pairs, ascending, then -1
  int num_active = 0;
  std::vector<std::array<int, 2>> tiles;  // (expert, first position) per tensor-core tile
  std::vector<int> sorted_pairs;   // [rows * top_k]: pair index by position; -1 past the last pair
  std::vector<int> pair_position;  // [rows * top_k]: the pair's position, or -1 (no pair)
  unsigned status = 0;             // kBadCount, kBadExpert
};

// The grouping of a receive buffer (g.ranks blocks as received) for a rank with
// `local_experts` experts. stale_counts: as in ExpertRowsArgs (the mutation ep-reuse-counts).
ReceivedGrouping group_received_host(const WireGeometry& g, int local_experts, const unsigned char* recv,
                                     const int* stale_counts = nullptr);

}  // namespace moe::kernels::ep
