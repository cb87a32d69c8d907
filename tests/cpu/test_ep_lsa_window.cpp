// The LSA exchange's host side on the CPU: the symmetric window's layout (regions, each source
// rank's block offset, alignment and size), the bytes of a block the copy moves, and the
// exchange names the CLI validates --exchange with.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/exchange_names.hpp"
#include "engine/ep/lsa_window_layout.hpp"
#include "engine/ep/wire_layout.hpp"

using namespace moe;
using namespace moe::ep;

TEST_CASE("LSA window: the receive regions, the status word and the size on 4096-byte boundaries") {
  // hidden 64, top_k 2: meta 32, dispatch row 160, combine row 256; capacity 3 over 4 ranks.
  const WireLayout wire = make_wire_layout(64, 2, 4, 3);
  const LsaWindowLayout L = make_lsa_window_layout(wire);
  CHECK(L.ranks == 4);
  CHECK(L.dispatch_block_bytes == 16 + 3 * 160);
  CHECK(L.combine_block_bytes == 16 + 3 * 256);
  CHECK(L.dispatch_offset == 0);
  CHECK(L.combine_offset == 4096);         // after 4 * 496 = 1984 bytes of dispatch blocks
  CHECK(L.status_offset == 8192);          // after 4096 + 4 * 784 = 7232
  CHECK(L.window_bytes == 12288);          // status word, rounded up
  CHECK(L.dispatch_block_offset(0) == 0);
  CHECK(L.dispatch_block_offset(2) == 2 * 496);
  CHECK(L.combine_block_offset(3) == 4096 + 3 * 784);
  CHECK_THROWS_AS(L.dispatch_block_offset(4), UsageError);
  CHECK_THROWS_AS(L.combine_block_offset(-1), UsageError);
}

TEST_CASE("LSA window: a smaller alignment packs the regions, and a bad one is refused") {
  const WireLayout wire = make_wire_layout(64, 2, 4, 3);
  const LsaWindowLayout L = make_lsa_window_layout(wire, 16);
  CHECK(L.combine_offset == 1984);
  CHECK(L.status_offset == 1984 + 3136);
  CHECK(L.window_bytes == 1984 + 3136 + 16);
  CHECK_THROWS_AS(make_lsa_window_layout(wire, 8), UsageError);
  CHECK_THROWS_AS(make_lsa_window_layout(wire, 48), UsageError);
  CHECK_THROWS_AS(make_lsa_window_layout(WireLayout{}, 4096), UsageError);
}

TEST_CASE("LSA window: over shapes and rank counts every block is 16-byte aligned and inside its region") {
  for (int hidden : {8, 64, 2048, 7168})
    for (int top_k : {1, 2, 8})
      for (int ranks : {1, 2, 3, 8, 32})
        for (int capacity : {1, 7, 128}) {
          CAPTURE(hidden);
          CAPTURE(top_k);
          CAPTURE(ranks);
          CAPTURE(capacity);
          const WireLayout wire = make_wire_layout(hidden, top_k, ranks, capacity);
          const LsaWindowLayout L = make_lsa_window_layout(wire);
          CHECK(L.window_bytes % 4096 == 0);
          CHECK(L.combine_offset % 4096 == 0);
          CHECK(L.status_offset % 4096 == 0);
          CHECK(L.combine_offset >= L.dispatch_offset + wire.dispatch_bytes());
          CHECK(L.status_offset >= L.combine_offset + wire.combine_bytes());
          CHECK(L.window_bytes >= L.status_offset + LsaWindowLayout::kStatusBytes);
          for (int s = 0; s < ranks; ++s) {
            CHECK(L.dispatch_block_offset(s) % 16 == 0);
            CHECK(L.combine_block_offset(s) % 16 == 0);
            CHECK(L.dispatch_block_offset(s) + L.dispatch_block_bytes <= L.combine_offset);
            CHECK(L.combine_block_offset(s) + L.combine_block_bytes <= L.status_offset);
          }
        }
}

TEST_CASE("the copy moves a block's header and its counted rows; a corrupt count moves the whole block") {
  static_assert(meaningful_block_bytes(16, 160, 2, 3) == 16 + 2 * 160);  // usable in kernels
  CHECK(meaningful_block_bytes(16, 160, 0, 3) == 16);
  CHECK(meaningful_block_bytes(16, 160, 3, 3) == 16 + 3 * 160);
  CHECK(meaningful_block_bytes(16, 160, 4, 3) == 16 + 3 * 160);
  CHECK(meaningful_block_bytes(16, 160, -1, 3) == 16 + 3 * 160);
  // Always whole 16-byte words of the wire's rows.
  const WireLayout wire = make_wire_layout(7168, 8, 8, 128);
  for (int count : {0, 1, 77, 128})
    CHECK(meaningful_block_bytes(WireLayout::kHeaderBytes, wire.dispatch_row_bytes(), count, 128) % 16 == 0);
}

TEST_CASE("exchange names: the default set leaves lsa out; --exchange values are checked") {
  const std::vector<std::string_view> all = exchange_names();
  CHECK(all == std::vector<std::string_view>{"alltoall", "sendrecv", "lsa"});
  CHECK(default_exchange_names() == std::vector<std::string_view>{"alltoall", "sendrecv"});
  CHECK_NOTHROW(validate_exchange_names({}));
  CHECK_NOTHROW(validate_exchange_names({"sendrecv", "alltoall"}));
  try {
    validate_exchange_names({"shm"});
    FAIL("accepted an unknown exchange");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "--exchange 'shm' is not valid; valid: alltoall, sendrecv, lsa");
  }
  CHECK_THROWS_WITH_AS(validate_exchange_names({"sendrecv", "sendrecv"}),
                       "--exchange 'sendrecv' is given twice", UsageError);
  if (lsa_exchange_built()) {
    CHECK(lsa_exchange_not_built_reason().empty());
    CHECK_NOTHROW(validate_exchange_names({"lsa"}));
    CHECK(describe_exchange_axis().find("not built") == std::string::npos);
  } else {
    CHECK_FALSE(lsa_exchange_not_built_reason().empty());
    CHECK_THROWS_AS(validate_exchange_names({"lsa"}), EnvironmentError);
    CHECK(describe_exchange_axis().find(std::string(lsa_exchange_not_built_reason())) != std::string::npos);
  }
  CHECK(describe_exchange_axis().find("lsa only with --exchange lsa") != std::string::npos);
}
