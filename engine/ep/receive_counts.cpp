#include "engine/ep/receive_counts.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "common/errors.hpp"

namespace moe::ep {

namespace {

// Counts of one block whose reader is rank `reader`.
void count_block(const WireLayout& L, const ExpertMap& map, int reader, const unsigned char* block, int b,
                 BlockCounts& out) {
  std::int32_t count = 0;
  std::memcpy(&count, block, 4);
  out.rows[b] = count;
  const int bank = static_cast<int>(map.experts_of(reader).size());
  out.pairs[b].assign(bank, 0);
  const int valid = std::clamp<int>(count, 0, L.capacity);
  for (int r = 0; r < valid; ++r) {
    const unsigned char* rec = block + WireLayout::kHeaderBytes + L.dispatch_row_bytes() * r;
    for (int k = 0; k < L.top_k; ++k) {
      std::int32_t e = 0;
      std::memcpy(&e, rec + WireLayout::experts_offset() + 4 * k, 4);
      if (e == -1) continue;
      if (e >= 0 && e < bank)
        ++out.pairs[b][e];
      else
        ++out.stray_slots[b];
    }
  }
}

BlockCounts empty_counts(int ranks) {
  BlockCounts c;
  c.rows.assign(ranks, 0);
  c.pairs.assign(ranks, {});
  c.stray_slots.assign(ranks, 0);
  return c;
}

}  // namespace

BlockCounts sent_counts(const WireLayout& L, const ExpertMap& map, const unsigned char* send) {
  BlockCounts c = empty_counts(L.ranks);
  for (int d = 0; d < L.ranks; ++d) count_block(L, map, d, send + L.dispatch_block_bytes() * d, d, c);
  return c;
}

BlockCounts received_counts(const WireLayout& L, const ExpertMap& map, int self, const unsigned char* recv) {
  BlockCounts c = empty_counts(L.ranks);
  for (int s = 0; s < L.ranks; ++s) count_block(L, map, self, recv + L.dispatch_block_bytes() * s, s, c);
  return c;
}

BlockCounts expected_received_counts(const ExpertMap& map, int self, const std::vector<std::vector<int>>& ids,
                                     int top_k) {
  const int P = static_cast<int>(ids.size());
  BlockCounts c = empty_counts(P);
  const int bank = static_cast<int>(map.experts_of(self).size());
  for (int s = 0; s < P; ++s) {
    c.pairs[s].assign(bank, 0);
    const int m = top_k > 0 ? static_cast<int>(ids[s].size()) / top_k : 0;
    for (int t = 0; t < m; ++t) {
      bool crosses = false;
      for (int k = 0; k < top_k; ++k) {
        const int e = ids[s][static_cast<std::size_t>(t) * top_k + k];
        if (e < 0 || e >= map.experts() || map.owner(e) != self) continue;
        crosses = true;
        ++c.pairs[s][map.local_index(e)];
      }
      if (crosses) ++c.rows[s];
    }
  }
  return c;
}

BlockCounts addressed_to(int self, const std::vector<BlockCounts>& sent_by_rank) {
  const int P = static_cast<int>(sent_by_rank.size());
  BlockCounts c = empty_counts(P);
  for (int s = 0; s < P; ++s) {
    const BlockCounts& from = sent_by_rank[s];
    if (self >= static_cast<int>(from.rows.size()) || self >= static_cast<int>(from.pairs.size()) ||
        self >= static_cast<int>(from.stray_slots.size()))
      throw Error(ExitCode::probe_error, "receive counts: rank " + std::to_string(s) + " sent counts for " +
                                             std::to_string(from.rows.size()) + " ranks, not rank " +
                                             std::to_string(self));
    c.rows[s] = from.rows[self];
    c.pairs[s] = from.pairs[self];
    c.stray_slots[s] = from.stray_slots[self];
  }
  return c;
}

std::string encode_counts(const BlockCounts& c) {
  // "P" then per block: rows, stray slots, experts, then that many pair counts.
  std::ostringstream o;
  o << c.rows.size();
  for (std::size_t b = 0; b < c.rows.size(); ++b) {
    o << ' ' << c.rows[b] << ' ' << c.stray_slots[b] << ' ' << c.pairs[b].size();
    for (int p : c.pairs[b]) o << ' ' << p;
  }
  return o.str();
}

BlockCounts decode_counts(const std::string& text) {
  std::istringstream in(text);
  auto bad = [&] { return Error(ExitCode::probe_error, "receive counts: malformed counts '" + text + "'"); };
  long blocks = -1;
  if (!(in >> blocks) || blocks < 0 || blocks > 1 << 16) throw bad();
  BlockCounts c = empty_counts(static_cast<int>(blocks));
  for (long b = 0; b < blocks; ++b) {
    long experts = -1;
    if (!(in >> c.rows[b] >> c.stray_slots[b] >> experts) || experts < 0 || experts > 1 << 20) throw bad();
    c.pairs[b].assign(experts, 0);
    for (int& p : c.pairs[b])
      if (!(in >> p)) throw bad();
  }
  std::string rest;
  if (in >> rest) throw bad();
  return c;
}

std::string counts_mismatch(const ExpertMap& map, int self, const BlockCounts& expected, const BlockCounts& received) {
  if (expected == received) return "";
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (expected.rows.size() != received.rows.size())
    return "rank " + std::to_string(self) + ": " + std::to_string(received.rows.size()) + " receive blocks, expected " +
           std::to_string(expected.rows.size());
  const std::vector<int>& bank = map.experts_of(self);
  for (std::size_t s = 0; s < expected.rows.size(); ++s) {
    const std::string from = "from rank " + std::to_string(s);
    if (received.rows[s] != expected.rows[s])
      add(std::to_string(received.rows[s]) + " rows " + from + ", expected " + std::to_string(expected.rows[s]));
    if (received.stray_slots[s] != expected.stray_slots[s])
      add(std::to_string(received.stray_slots[s]) + " slots " + from + " naming no expert of rank " +
          std::to_string(self) + ", expected " + std::to_string(expected.stray_slots[s]));
    const std::vector<int>& want = expected.pairs[s];
    const std::vector<int>& got = received.pairs[s];
    for (std::size_t e = 0; e < std::max(want.size(), got.size()); ++e) {
      const int w = e < want.size() ? want[e] : 0, g = e < got.size() ? got[e] : 0;
      if (w == g) continue;
      const std::string name = e < bank.size() ? "expert " + std::to_string(bank[e]) : "local expert " + std::to_string(e);
      add(std::to_string(g) + " pairs of " + name + " " + from + ", expected " + std::to_string(w));
    }
  }
  return "rank " + std::to_string(self) + " received other counts than were sent to it: " + out;
}

std::string check_receive_counts(Rendezvous& rendezvous, const WireLayout& layout, const ExpertMap& map,
                                 const unsigned char* send, const unsigned char* recv) {
  const std::vector<std::string> all = rendezvous.all_gather(encode_counts(sent_counts(layout, map, send)));
  std::vector<BlockCounts> sent;
  for (const std::string& text : all) sent.push_back(decode_counts(text));
  const int self = rendezvous.rank();
  return counts_mismatch(map, self, addressed_to(self, sent), received_counts(layout, map, self, recv));
}

}  // namespace moe::ep
