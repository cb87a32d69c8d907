#pragma once
// Exchange bandwidth in nccl-tests' alltoall terms, so that a step's exchange and the link's
// ceiling are compared like for like (nccl-tests, doc/PERFORMANCE.md):
//   algorithm bandwidth = bytes a rank exchanges (all P blocks, its own included) / time
//   bus bandwidth       = algorithm bandwidth x (P - 1) / P  (the bytes that cross a link)
// share_of_ceiling divides bus by bus: 1 at the ceiling whatever P is. (Algorithm bytes over
// the ceiling's bus bandwidth read P / (P - 1) at the ceiling: 2.0 on two ranks.)

namespace moe::ep {

// GB/s (1e9 bytes a second) of `bytes` a rank in `us` microseconds.
double alltoall_algorithm_gbps(double bytes, double us);
double alltoall_bus_gbps(double bytes, double us, int ranks);
// An exchange's bus bandwidth over the ceiling's (0 without a ceiling).
double share_of_ceiling(double exchange_bus_gbps, double ceiling_bus_gbps);

}  // namespace moe::ep
