#include "probes/two_engine/address_reuse.hpp"

#include <unordered_set>

namespace moe {

AddressReuse tally_address_reuse(const std::vector<EngineAddresses>& engines) {
  AddressReuse r;
  std::unordered_set<const void*> earlier_routers, earlier_experts;
  for (std::size_t i = 0; i < engines.size(); ++i) {
    const EngineAddresses& e = engines[i];
    if (i > 0) {
      ++r.later_engines;
      for (const void* p : e.routers) {
        ++r.later_routers;
        r.routers_reused += earlier_routers.count(p) != 0;
      }
      for (const void* p : e.experts) r.experts_reused += earlier_experts.count(p);
    }
    earlier_routers.insert(e.routers.begin(), e.routers.end());
    earlier_experts.insert(e.experts.begin(), e.experts.end());
  }
  return r;
}

}  // namespace moe
