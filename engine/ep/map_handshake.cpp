#include "engine/ep/map_handshake.hpp"

#include <cstdio>

namespace moe::ep {

namespace {
std::string fingerprint_text(std::uint64_t f) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f));
  return buf;
}
}  // namespace

void agree_on_expert_map(Rendezvous& rendezvous, const ExpertMap& map) {
  const std::string mine = fingerprint_text(map.fingerprint()) + " " + map.describe();
  // Everyone gathers before anyone judges, so every rank refuses (none waits on a refused one).
  const std::vector<std::string> all = rendezvous.all_gather(mine);
  std::string disagree;
  for (int r = 1; r < rendezvous.world(); ++r)
    if (all[r] != all[0])
      disagree += (disagree.empty() ? "" : "; ") + ("rank " + std::to_string(r) + " has '" +
                                                    all[r].substr(17) + "' [" +
                                                    all[r].substr(0, 16) + "]");
  if (!disagree.empty())
    throw MapDisagreement("expert map handshake: ranks disagree on the expert map, refusing to "
                          "build the layer: rank 0 has '" + all[0].substr(17) + "' [" +
                          all[0].substr(0, 16) + "]; " + disagree);
  if (map.ranks() != rendezvous.world())
    throw MapDisagreement("expert map handshake: the map is for " + std::to_string(map.ranks()) +
                          " ranks, the run has " + std::to_string(rendezvous.world()));
}

}  // namespace moe::ep
