#pragma once
// Exact receive counts, checked as DeepEP's tests check theirs. Every rank reads from its send
// buffer how many rows it packed for each destination and, per row slot, which of the
// destination's experts it names; the ranks gather those counts through the rendezvous, and a
// rank's receive buffer must then hold exactly what was addressed to it: the rows from each
// source rank, and the (row, slot) pairs of each of its experts from each source. A block
// delivered to the wrong rank or place, a stale or truncated count, a slot's expert changed
// on the way: each changes a count, and the mismatch names the source, the expert and both
// numbers.
#include <string>
#include <vector>

#include "engine/ep/expert_map.hpp"
#include "engine/ep/rendezvous.hpp"
#include "engine/ep/wire_layout.hpp"

namespace moe::ep {

// The counts of one buffer's blocks, block b being a peer rank (the destination of a send
// block, the source of a receive block).
struct BlockCounts {
  std::vector<int> rows;                // [P] the block header's row count
  std::vector<std::vector<int>> pairs;  // [P][experts of the receiving rank] slots naming each
                                        // local expert, over the block's valid records
  std::vector<int> stray_slots;         // [P] slots naming no expert of the receiving rank

  bool operator==(const BlockCounts& o) const {
    return rows == o.rows && pairs == o.pairs && stray_slots == o.stray_slots;
  }
};

// A send buffer's counts: block d as destination d will read it (pairs[d] sized to d's experts).
BlockCounts sent_counts(const WireLayout& layout, const ExpertMap& map, const unsigned char* send);
// A receive buffer of rank `self`: block s as it came from rank s (pairs[s] sized to self's
// experts). A count outside 0..capacity is kept as it is; only the records inside the capacity
// are read.
BlockCounts received_counts(const WireLayout& layout, const ExpertMap& map, int self, const unsigned char* recv);

// What rank `self` must receive when every rank r routed its m tokens to `ids[r]` ([m, top_k],
// global experts), independently of any buffer: a token crosses to a rank once, with one pair
// per slot on that rank's experts.
BlockCounts expected_received_counts(const ExpertMap& map, int self, const std::vector<std::vector<int>>& ids,
                                     int top_k);

// The part of every rank's sent counts (rank order) addressed to rank `self`: block s of the
// result is block `self` of rank s's counts.
BlockCounts addressed_to(int self, const std::vector<BlockCounts>& sent_by_rank);

// Through the rendezvous, as text.
std::string encode_counts(const BlockCounts& counts);
BlockCounts decode_counts(const std::string& text);  // throws moe::Error (probe error) if malformed

// Empty when `received` equals `expected`; else one line naming, for rank `self`, each source
// whose rows, per-expert pairs or stray slots differ, with both numbers (experts by global id).
std::string counts_mismatch(const ExpertMap& map, int self, const BlockCounts& expected, const BlockCounts& received);

// The protocol, collective: every rank gives its send and receive buffers of the same step
// (host copies of layout.dispatch_bytes()); returns this rank's mismatch (empty: exact).
std::string check_receive_counts(Rendezvous& rendezvous, const WireLayout& layout, const ExpertMap& map,
                                 const unsigned char* send, const unsigned char* recv);

}  // namespace moe::ep
