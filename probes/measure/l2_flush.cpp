#include "probes/measure/l2_flush.hpp"

#include "common/cuda_check.hpp"

namespace moe::measure {

const char* to_string(L2Mode m) { return m == L2Mode::cold ? "cold" : "hot"; }

L2Flusher::L2Flusher(const Device& device, DeviceAllocator& allocator)
    : buffer_(allocator.allocate(2 * (device.l2_bytes ? device.l2_bytes : (std::size_t{64} << 20)))) {}

void L2Flusher::flush(cudaStream_t stream) {
  // A different value each time, so no layer of the memory system can skip the write.
  value_ = (value_ + 1) & 0xff;
  MOE_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), value_, buffer_.bytes(), stream));
}

}  // namespace moe::measure
