// Probe two-engine's address evidence, from addresses alone: the quarantine phase's engines
// must show no earlier expert buffer handed out again, the reuse phase's the opposite, and a
// router at an earlier router's address (the key a device-keyed cache looks up).
#include <doctest/doctest.h>

#include <cstdint>

#include "probes/two_engine/address_reuse.hpp"

namespace {
const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
}  // namespace

TEST_CASE("two-engine address reuse: quarantined engines share no address, so no key is seen twice") {
  const auto r = moe::tally_address_reuse({{{at(0x1000), at(0x2000)}, {at(0x10000), at(0x20000)}},
                                           {{at(0x3000), at(0x4000)}, {at(0x30000), at(0x40000)}},
                                           {{at(0x5000), at(0x6000)}, {at(0x50000), at(0x60000)}}});
  CHECK(r.later_engines == 2);
  CHECK(r.later_routers == 4);
  CHECK(r.routers_reused == 0);
  CHECK(r.experts_reused == 0);
}

TEST_CASE("two-engine address reuse: a caching allocator's last-in first-out hands roles around") {
  // Engine 1's layer 0 router landed where engine 0's activations were, its layer 1 router at
  // engine 0's layer 1 router; its experts at engine 0's, reversed.
  const auto r = moe::tally_address_reuse({{{at(0x1000), at(0x2000)}, {at(0x10000), at(0x20000)}},
                                           {{at(0x9000), at(0x2000)}, {at(0x20000), at(0x10000)}}});
  CHECK(r.later_engines == 1);
  CHECK(r.later_routers == 2);
  CHECK(r.routers_reused == 1);
  CHECK(r.experts_reused == 2);
}

TEST_CASE("two-engine address reuse: a router counts against any earlier engine's routers, not its experts") {
  const auto r = moe::tally_address_reuse({{{at(0x1000)}, {at(0x10000)}},
                                           {{at(0x2000)}, {at(0x20000)}},
                                           {{at(0x10000)}, {at(0x1000)}},  // roles swapped: no key
                                           {{at(0x1000)}, {}}});
  CHECK(r.later_engines == 3);
  CHECK(r.routers_reused == 1);  // engine 3's router at engine 0's
  CHECK(r.experts_reused == 0);
  CHECK(moe::tally_address_reuse({}).later_engines == 0);
  CHECK(moe::tally_address_reuse({{{at(0x1000)}, {at(0x10000)}}}).later_routers == 0);
}
