#include "probes/ep_common/bus_bandwidth.hpp"

namespace moe::ep {

double alltoall_algorithm_gbps(double bytes, double us) { return us > 0 ? bytes / (us * 1e3) : 0.0; }

double alltoall_bus_gbps(double bytes, double us, int ranks) {
  return ranks > 0 ? alltoall_algorithm_gbps(bytes, us) * (ranks - 1) / ranks : 0.0;
}

double share_of_ceiling(double exchange_bus_gbps, double ceiling_bus_gbps) {
  return ceiling_bus_gbps > 0 ? exchange_bus_gbps / ceiling_bus_gbps : 0.0;
}

}  // namespace moe::ep
