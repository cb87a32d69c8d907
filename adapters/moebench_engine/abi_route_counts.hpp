#pragma once
// Route counts behind the ABI (MOEBENCH_CAP_ROUTE_COUNTS) from moebench's route telemetry
// (kernels/moe/route_telemetry.hpp): one record a layer that the route kernel only accumulates
// into, allocated once at create so its address never changes and a captured graph stays
// valid. The only reset is reset(), host-ordered on the stream and refused while the stream is
// being captured (a reset inside a graph would run on every replay: docs/bugs.md, bug 5).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "adapters/moebench_engine/abi_status.hpp"
#include "engine/device_allocator.hpp"
#include "kernels/moe/route_telemetry.hpp"

namespace moe::adapter {

class RouteCountRecords {
 public:
  // `layers` records of `experts` counts, zeroed on `stream`.
  void allocate(DeviceAllocator& allocator, int layers, int experts, cudaStream_t stream) {
    experts_ = experts;
    for (int l = 0; l < layers; ++l) records_.push_back(allocator.allocate(kernels::route_telemetry_bytes(experts)));
    zero(stream);
  }

  kernels::RouteTelemetry view(std::size_t layer) const {
    return kernels::route_telemetry_view(records_[layer].data(), experts_);
  }

  moebench_status read(moebench_route_counts& out, cudaStream_t stream, moebench_error* error) const {
    if (out.struct_size < sizeof(moebench_route_counts) || !out.counts)
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "route counts struct too small or no counts array");
    if (out.layer < 0 || static_cast<std::size_t>(out.layer) >= records_.size())
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "layer %d; valid: 0..%zu", out.layer, records_.size() - 1);
    if (out.experts != experts_)
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "%d experts asked; the layer has %d", out.experts, experts_);
    std::vector<unsigned char> host(kernels::route_telemetry_bytes(experts_));
    MOE_CUDA_CHECK(cudaMemcpyAsync(host.data(), records_[static_cast<std::size_t>(out.layer)].data(), host.size(),
                                   cudaMemcpyDeviceToHost, stream));
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const kernels::RouteTelemetry t = kernels::route_telemetry_view(host.data(), experts_);
    for (int e = 0; e < experts_; ++e) out.counts[e] = t.counts[e];
    out.window = window_;
    out.flags = ((t.header->flags & kernels::kTelemetryOverflowed) ? MOEBENCH_ROUTE_OVERFLOW : 0u) |
                ((t.header->flags & kernels::kTelemetryPoisoned) ? MOEBENCH_ROUTE_POISONED : 0u);
    return MOEBENCH_OK;
  }

  moebench_status reset(cudaStream_t stream, moebench_error* error) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MOE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT,
                  "reset_route_counts refused: the stream is being captured (a reset in a graph "
                  "would run on every replay)");
    zero(stream);
    ++window_;
    return MOEBENCH_OK;
  }

 private:
  void zero(cudaStream_t stream) {
    for (const DeviceBuffer& r : records_) MOE_CUDA_CHECK(cudaMemsetAsync(r.data(), 0, r.bytes(), stream));
  }

  int experts_ = 0;
  std::vector<DeviceBuffer> records_;
  std::uint64_t window_ = 1;
};

}  // namespace moe::adapter
