#pragma once
#include <cuda_runtime_api.h>

#include "engine/device.hpp"
#include "engine/device_allocator.hpp"

namespace moe::measure {

enum class L2Mode { cold, hot };
const char* to_string(L2Mode m);

// Evicts the L2 before a cold sample by writing a buffer twice the L2's size, so the timed work
// reads its weights from HBM rather than from what the previous sample left in cache.
class L2Flusher {
 public:
  L2Flusher(const Device& device, DeviceAllocator& allocator);
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer buffer_;
  int value_ = 0;
};

}  // namespace moe::measure
