// What a rank checks about the rows it received, on the host over the wire bytes of a dispatch
// of P ranks: exact per-rank and per-expert counts (against the routing and against what the
// senders packed), every row carrying its source's rank-coded payload bit for bit, and digests
// that make two runs of a step comparable. Each check passes on the exchange as packed and
// fails on a mutated one: a block in the wrong place, a count off by one, an expert changed, a
// row torn or carrying another token.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/rank_coded_payload.hpp"
#include "engine/ep/receive_counts.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_digest.hpp"
#include "kernels/moe/bf16.hpp"
#include "support/host_exchange.hpp"

using namespace moe;
using namespace moe::ep;
using namespace moe::test;

namespace {

std::vector<BlockCounts> all_sent(const HostExchange& x) {
  std::vector<BlockCounts> sent;
  for (const auto& s : x.send) sent.push_back(sent_counts(x.layout, x.map, s.data()));
  return sent;
}

std::string mismatch_of(const HostExchange& x, int self, const std::vector<unsigned char>& recv) {
  return counts_mismatch(x.map, self, addressed_to(self, all_sent(x)), received_counts(x.layout, x.map, self, recv.data()));
}

// Two source blocks of rank `self` with different counts (the test needs them to tell a swap).
std::pair<int, int> blocks_with_different_counts(const HostExchange& x, int self) {
  for (int a = 0; a < x.layout.ranks; ++a)
    for (int b = a + 1; b < x.layout.ranks; ++b)
      if (count_of(x.layout, x.recv[self], a) != count_of(x.layout, x.recv[self], b)) return {a, b};
  return {-1, -1};
}

}  // namespace

TEST_CASE("receive counts: exact per source rank and per expert, from the routing and from the senders") {
  for (int ranks : {1, 2, 3, 4}) {
    CAPTURE(ranks);
    const HostExchange x = host_exchange(ranks, 10, 3, 24, 32, 7 + ranks);
    const std::vector<BlockCounts> sent = all_sent(x);
    for (int self = 0; self < ranks; ++self) {
      CAPTURE(self);
      const BlockCounts got = received_counts(x.layout, x.map, self, x.recv[self].data());
      const BlockCounts routed = expected_received_counts(x.map, self, x.ids, 3);
      CHECK(got == routed);
      CHECK(got == addressed_to(self, sent));
      CHECK(counts_mismatch(x.map, self, routed, got).empty());
      // Every pair of the rank's experts accounted for, none stray.
      int pairs = 0, want = 0;
      for (int s = 0; s < ranks; ++s) {
        for (int p : got.pairs[s]) pairs += p;
        CHECK(got.stray_slots[s] == 0);
      }
      for (int s = 0; s < ranks; ++s)
        for (int e : x.ids[s]) want += x.map.owner(e) == self ? 1 : 0;
      CHECK(pairs == want);
    }
  }
}

TEST_CASE("receive counts: a swapped block, a count off by one, a changed or stray expert, a stale block all fail") {
  const HostExchange x = host_exchange(3, 10, 3, 24, 32, 11);
  const WireLayout& L = x.layout;
  const int self = 1;
  REQUIRE(mismatch_of(x, self, x.recv[self]).empty());

  SUBCASE("two source blocks swapped") {
    const auto [a, b] = blocks_with_different_counts(x, self);
    REQUIRE(a >= 0);
    std::vector<unsigned char> recv = x.recv[self];
    const std::size_t block = L.dispatch_block_bytes();
    std::vector<unsigned char> tmp(recv.begin() + block * a, recv.begin() + block * (a + 1));
    std::memcpy(recv.data() + block * a, recv.data() + block * b, block);
    std::memcpy(recv.data() + block * b, tmp.data(), block);
    const std::string m = mismatch_of(x, self, recv);
    CHECK(m.find("rank 1 received other counts than were sent to it: ") == 0);
    CHECK(m.find("rows from rank " + std::to_string(a) + ", expected " + std::to_string(count_of(L, x.recv[self], a))) !=
          std::string::npos);
  }
  SUBCASE("a header count one short (a truncated block)") {
    std::vector<unsigned char> recv = x.recv[self];
    const int c = count_of(L, recv, 2);
    REQUIRE(c > 0);
    set_count(L, recv, 2, c - 1);
    const std::string m = mismatch_of(x, self, recv);
    CHECK(m.find(std::to_string(c - 1) + " rows from rank 2, expected " + std::to_string(c)) != std::string::npos);
  }
  SUBCASE("a count past the capacity") {
    std::vector<unsigned char> recv = x.recv[self];
    set_count(L, recv, 0, L.capacity + 5);
    CHECK(mismatch_of(x, self, recv).find(std::to_string(L.capacity + 5) + " rows from rank 0") != std::string::npos);
  }
  SUBCASE("one slot's expert changed to another of the rank's experts") {
    std::vector<unsigned char> recv = x.recv[self];
    REQUIRE(count_of(L, recv, 0) > 0);
    unsigned char* rec = record_of(L, recv, 0, 0);
    int k = 0;
    std::int32_t e = -1;
    for (; k < L.top_k; ++k) {
      std::memcpy(&e, rec + WireLayout::experts_offset() + 4 * k, 4);
      if (e >= 0) break;
    }
    REQUIRE(e >= 0);
    const std::int32_t other = (e + 1) % static_cast<int>(x.map.experts_of(self).size());
    std::memcpy(rec + WireLayout::experts_offset() + 4 * k, &other, 4);
    const std::string m = mismatch_of(x, self, recv);
    CHECK(m.find("pairs of expert " + std::to_string(x.map.experts_of(self)[other]) + " from rank 0") != std::string::npos);
    CHECK(m.find("pairs of expert " + std::to_string(x.map.experts_of(self)[e]) + " from rank 0") != std::string::npos);
  }
  SUBCASE("a slot naming an expert outside the rank's bank") {
    std::vector<unsigned char> recv = x.recv[self];
    REQUIRE(count_of(L, recv, 2) > 0);
    const std::int32_t stray = 99;
    std::memcpy(record_of(L, recv, 2, 0) + WireLayout::experts_offset(), &stray, 4);
    CHECK(mismatch_of(x, self, recv).find("1 slots from rank 2 naming no expert of rank 1, expected 0") != std::string::npos);
  }
  SUBCASE("a block left from another step") {
    const HostExchange other = host_exchange(3, 10, 3, 24, 32, 12345);
    std::vector<unsigned char> recv = x.recv[self];
    const std::size_t block = L.dispatch_block_bytes();
    std::memcpy(recv.data(), other.recv[self].data(), block);  // block 0 of the other step
    REQUIRE(received_counts(L, x.map, self, recv.data()) != received_counts(L, x.map, self, x.recv[self].data()));
    CHECK_FALSE(mismatch_of(x, self, recv).empty());
  }
}

TEST_CASE("receive counts: the text that crosses the rendezvous round-trips; malformed text is refused") {
  const HostExchange x = host_exchange(4, 10, 2, 9, 16, 3);
  for (const auto& s : x.send) {
    const BlockCounts c = sent_counts(x.layout, x.map, s.data());
    CHECK(decode_counts(encode_counts(c)) == c);
  }
  BlockCounts shorter = sent_counts(x.layout, x.map, x.send[0].data());
  const std::string text = encode_counts(shorter);
  for (const std::string& bad : {std::string(""), std::string("x"), text.substr(0, text.size() - 2), text + " 7",
                                 std::string("2 1 0 -1")})
    CHECK_THROWS_AS(decode_counts(bad), Error);
  // A sender that knew of fewer ranks than the receiver is refused, not read past its end.
  shorter.rows.resize(1);
  CHECK_THROWS_AS(addressed_to(2, {shorter}), Error);
}

TEST_CASE("rank-coded payload: exact in bf16, one row per (rank, token), and every received row is its source's") {
  std::set<std::vector<float>> seen;
  int inexact = 0;
  for (int r = 0; r < 6; ++r) {
    const std::vector<float> rows = rank_coded_rows(r, 300, 16);
    for (float v : rows) inexact += kernels::bf16_bits_to_float(kernels::float_to_bf16_bits(v)) == v ? 0 : 1;
    for (int t = 0; t < 300; ++t) seen.insert(std::vector<float>(rows.begin() + t * 16, rows.begin() + (t + 1) * 16));
  }
  CHECK(inexact == 0);
  CHECK(seen.size() == 6 * 300);
  CHECK_THROWS_AS(rank_coded_rows(256, 1, 16), UsageError);
  CHECK_THROWS_AS(rank_coded_rows(0, 1 << 17, 16), UsageError);

  const HostExchange x = host_exchange(3, 10, 3, 24, 32, 5);
  const WireLayout& L = x.layout;
  for (int self = 0; self < 3; ++self) {
    const std::vector<ReceivedRow> rows = unpack_received_host(L, x.recv[self].data());
    REQUIRE(!rows.empty());
    CHECK(rank_coded_mismatch(rows, 24).empty());
  }
  const int self = 2;
  REQUIRE(count_of(L, x.recv[self], 1) >= 2);
  SUBCASE("one bit of one element flipped") {
    std::vector<unsigned char> recv = x.recv[self];
    record_of(L, recv, 1, 1)[L.hidden_offset() + 2 * 5] ^= 0x01;
    const std::string m = rank_coded_mismatch(unpack_received_host(L, recv.data()), 24);
    CHECK(m.find("1 of ") == 0);
    CHECK(m.find("record 1 from rank 1: token ") != std::string::npos);
    CHECK(m.find(" element 5 is ") != std::string::npos);
  }
  SUBCASE("two records' token fields exchanged") {
    std::vector<unsigned char> recv = x.recv[self];
    unsigned char* a = record_of(L, recv, 1, 0);
    unsigned char* b = record_of(L, recv, 1, 1);
    std::int32_t ta = 0, tb = 0;
    std::memcpy(&ta, a, 4);
    std::memcpy(&tb, b, 4);
    std::memcpy(a, &tb, 4);
    std::memcpy(b, &ta, 4);
    CHECK(rank_coded_mismatch(unpack_received_host(L, recv.data()), 24).find("2 of ") == 0);
  }
  SUBCASE("a block received under another source's place") {
    const auto [a, b] = blocks_with_different_counts(x, self);
    REQUIRE(a >= 0);
    // The block with rows goes to the other's place.
    const int from = count_of(L, x.recv[self], b) > 0 ? b : a, to = from == b ? a : b;
    std::vector<unsigned char> recv = x.recv[self];
    const std::size_t block = L.dispatch_block_bytes();
    std::memcpy(recv.data() + block * to, x.recv[self].data() + block * from, block);
    CHECK_FALSE(rank_coded_mismatch(unpack_received_host(L, recv.data()), 24).empty());
  }
  SUBCASE("a token index past the source's tokens") {
    std::vector<unsigned char> recv = x.recv[self];
    const std::int32_t t = 24;
    std::memcpy(record_of(L, recv, 0, 0), &t, 4);
    CHECK(rank_coded_mismatch(unpack_received_host(L, recv.data()), 24).find("token 24 outside 0..23") !=
          std::string::npos);
  }
}

TEST_CASE("wire digest: the meaning of a dispatch buffer, not its padding; any field's bit changes it") {
  const HostExchange x = host_exchange(3, 10, 3, 24, 32, 9);
  const WireLayout& L = x.layout;
  const std::vector<unsigned char>& base = x.recv[0];
  const std::uint64_t d0 = dispatch_digest(L, base.data());
  CHECK(dispatch_digest(L, x.recv[0].data()) == d0);
  CHECK(dispatch_digest(L, x.recv[1].data()) != d0);

  std::vector<unsigned char> padded = base;  // header padding and records past the count rewritten
  for (int b = 0; b < L.ranks; ++b) {
    padded[L.dispatch_block_bytes() * b + 8] ^= 0xFF;
    const int c = count_of(L, padded, b);
    if (c < L.capacity) record_of(L, padded, b, c)[3] ^= 0xFF;
  }
  CHECK(dispatch_digest(L, padded.data()) == d0);

  REQUIRE(count_of(L, base, 1) > 0);
  for (std::size_t offset : {WireLayout::token_offset(), WireLayout::experts_offset() + 4, L.weights_offset() + 2,
                             L.hidden_offset() + 2 * (L.hidden - 1) + 1}) {
    CAPTURE(offset);
    std::vector<unsigned char> changed = base;
    record_of(L, changed, 1, 0)[offset] ^= 0x10;
    CHECK(dispatch_digest(L, changed.data()) != d0);
  }
  std::vector<unsigned char> recount = base;
  set_count(L, recount, 1, count_of(L, base, 1) - 1);
  CHECK(dispatch_digest(L, recount.data()) != d0);

  CHECK(repeat_difference({d0, d0, d0}, "the receive buffer").empty());
  CHECK(repeat_difference({d0, d0, d0 ^ 1}, "the receive buffer") ==
        "the receive buffer differed between run 1 and run 3 of the same step on the same input");
  const std::uint16_t out[3] = {1, 2, 3}, out2[3] = {1, 2, 4};
  CHECK(bytes_digest(out, sizeof out) != bytes_digest(out2, sizeof out2));
}
