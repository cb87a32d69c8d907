#pragma once
// The link's ceilings as NCCL reaches them: ncclAlltoAll bus bandwidth over a large buffer (the
// nccl-tests convention: bus = algorithm bandwidth * (P - 1) / P), and a grouped send/recv
// between one pair of ranks in both directions at once. Every rank takes part; the data is
// checked (each block carries its source and destination) before any time is kept.
#include <vector>

#include "engine/device_allocator.hpp"
#include "engine/ep/nccl/communicator.hpp"

namespace moe::ep {

struct LinkSample {
  bool data_ok = false;
  double median_us = 0;
  double algorithm_gbps = 0;  // bytes a rank sends (to others) / time
  double bus_gbps = 0;
  std::size_t bytes = 0;      // per rank
};

// `bytes` per rank (rounded down to a multiple of 16 * ranks), `reps` timed runs.
LinkSample measure_alltoall(Communicator& comm, DeviceAllocator& alloc, std::size_t bytes, int reps,
                            cudaStream_t stream);
// Ranks a and b exchange `bytes` each way; every other rank only takes part in the checks.
LinkSample measure_pair(Communicator& comm, DeviceAllocator& alloc, int a, int b, std::size_t bytes,
                        int reps, cudaStream_t stream);

}  // namespace moe::ep
