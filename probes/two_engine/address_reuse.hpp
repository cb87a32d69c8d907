#pragma once
// What probe two-engine measures about device addresses across its engines, from the addresses
// alone (CPU-tested: tests/cpu/test_two_engine_address_reuse.cpp). Its quarantine phase must
// show that no later engine got an earlier engine's expert buffer (a stale table then reads
// poison); its reuse phase must show the opposite, that later engines got earlier engines'
// addresses, above all a router's: the key a cache keyed by a device pointer looks up.
#include <cstddef>
#include <vector>

namespace moe {

// The device addresses of one engine, in the order it was built.
struct EngineAddresses {
  std::vector<const void*> routers;  // one a layer
  std::vector<const void*> experts;  // every expert buffer (weights and scales) of every layer
};

struct AddressReuse {
  int later_engines = 0;
  int later_routers = 0;           // routers of engines after the first
  int routers_reused = 0;          // of those, at an address an earlier engine's router had
  std::size_t experts_reused = 0;  // expert buffers of later engines at an earlier one's address
                                   // (an earlier buffer taken twice counts twice)
};

// Tallies `engines`, built in this order, each against every engine before it.
AddressReuse tally_address_reuse(const std::vector<EngineAddresses>& engines);

}  // namespace moe
