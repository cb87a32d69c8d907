#pragma once
#include <cuda_runtime_api.h>

#include "engine/device.hpp"
#include "engine/device_allocator.hpp"
#include "kernels/bandwidth/bandwidth_kernels.hpp"

namespace moe::measure {

enum class L2Mode { cold, hot };
const char* to_string(L2Mode m);

// Evicts the L2 before a cold sample by reading a buffer twice the L2's size, so the timed work
// reads its weights from HBM rather than from what the previous sample left in cache. Reading,
// not writing: a memset flush leaves up to an L2 of dirty lines whose write-back the first
// timed kernel would pay for (HBM bandwidth that a real decode step never spends).
class L2Flusher {
 public:
  L2Flusher(const Device& device, DeviceAllocator& allocator);
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer buffer_;
  DeviceBuffer xor_out_;  // the read's checksum, which nobody reads: it keeps the loads alive
  kernels::StreamLaunch launch_;
};

}  // namespace moe::measure
