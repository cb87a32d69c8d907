#include "probes/measure/l2_flush.hpp"

#include <cstdint>

#include "common/cuda_check.hpp"

namespace moe::measure {

const char* to_string(L2Mode m) { return m == L2Mode::cold ? "cold" : "hot"; }

L2Flusher::L2Flusher(const Device& device, DeviceAllocator& allocator)
    : buffer_(allocator.allocate(2 * (device.l2_bytes ? device.l2_bytes : (std::size_t{64} << 20)))),
      xor_out_(allocator.allocate(sizeof(std::uint32_t))),
      launch_(kernels::StreamLaunch::for_device(device.sm_count > 0 ? device.sm_count : 1)) {
  // Written once so the flush never reads uninitialised memory (compute-sanitizer's initcheck).
  MOE_CUDA_CHECK(cudaMemset(buffer_.data(), 0, buffer_.bytes()));
}

void L2Flusher::flush(cudaStream_t stream) {
  kernels::read_through_l2(buffer_.data(), buffer_.bytes(), xor_out_.as<std::uint32_t>(), launch_, stream);
}

}  // namespace moe::measure
