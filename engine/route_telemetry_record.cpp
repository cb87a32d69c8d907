#include "engine/route_telemetry_record.hpp"

#include <cstddef>

#include "common/cuda_check.hpp"
#include "engine/stream.hpp"

namespace moe {

RouteTelemetryRecord::RouteTelemetryRecord(DeviceAllocator& allocator, const TelemetryIdentity& identity,
                                           int experts, std::uint64_t epoch, Stream& stream)
    : identity_(identity), experts_(experts),
      buffer_(allocator.allocate(kernels::route_telemetry_bytes(experts))) {
  open_window(epoch, stream);
}

void RouteTelemetryRecord::open_window(std::uint64_t epoch, Stream& stream) {
  write(TelemetryWindow::consistent(identity_, epoch, std::vector<std::uint32_t>(static_cast<std::size_t>(experts_), 0u)),
        stream);
}

void RouteTelemetryRecord::write(const TelemetryWindow& window, Stream& stream) {
  if (window.experts() != experts_)
    throw Error(ExitCode::probe_error, "telemetry window of " + std::to_string(window.experts()) +
                                           " experts written to a record of " + std::to_string(experts_));
  staging_ = window.to_record();
  MOE_CUDA_CHECK(cudaMemcpyAsync(buffer_.data(), staging_.data(), staging_.size(), cudaMemcpyHostToDevice,
                                 stream.handle()));
}

TelemetryWindow RouteTelemetryRecord::read(Stream& stream) const {
  stream.drain();
  std::vector<std::byte> host(buffer_.bytes());
  MOE_CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer_.data(), host.size(), cudaMemcpyDeviceToHost,
                                 stream.handle()));
  stream.drain();
  return TelemetryWindow::from_record(host.data(), host.size());
}

void RouteTelemetryRecord::enqueue_zero(Stream& stream) {
  // ---- The rejected design, live only under Mutation::telemetry_reset_per_replay ----------
  // A reset issued with every forward: captured into a graph, it runs on every replay, so the
  // window holds only the last replay (and costs a node a layer).
  auto* base = static_cast<char*>(buffer_.data());
  const std::size_t flags_at = offsetof(kernels::RouteTelemetryHeader, flags);
  MOE_CUDA_CHECK(cudaMemsetAsync(base + flags_at, 0, buffer_.bytes() - flags_at, stream.handle()));
}

}  // namespace moe
