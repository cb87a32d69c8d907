#pragma once
// One layer's route telemetry record on the device (layout: kernels/moe/route_telemetry.hpp),
// allocated through the engine's allocator. Its device address is fixed for its lifetime:
// windows are opened by rewriting it in place, so graphs captured with it stay valid.
#include <cstdint>
#include <vector>

#include "engine/device_allocator.hpp"
#include "engine/telemetry_window.hpp"
#include "kernels/moe/route_telemetry.hpp"

namespace moe {

class Stream;

class RouteTelemetryRecord {
 public:
  // Allocates and enqueues window `epoch` (identity stamped, everything else zero): a copy,
  // no kernel. The caller drains before the first read.
  RouteTelemetryRecord(DeviceAllocator& allocator, const TelemetryIdentity& identity, int experts,
                       std::uint64_t epoch, Stream& stream);
  RouteTelemetryRecord(const RouteTelemetryRecord&) = delete;
  RouteTelemetryRecord& operator=(const RouteTelemetryRecord&) = delete;

  // Enqueues an empty window `epoch` over the record (caller checked the boundary, drains).
  void open_window(std::uint64_t epoch, Stream& stream);
  // Drains and copies the record to the host.
  TelemetryWindow read(Stream& stream) const;
  // Enqueues `window`'s image over the record (tests and the probe's forced overflow preload
  // counts near 2^32; caller drains).
  void write(const TelemetryWindow& window, Stream& stream);
  // Mutation telemetry-reset-per-replay only: zeroes flags, total, bitmap and counts with a
  // memset node on the stream, inside whatever is being captured.
  void enqueue_zero(Stream& stream);

  // The kernel's view (armed); the fault point and the mutation flag are the caller's.
  kernels::RouteTelemetry view() const { return kernels::route_telemetry_view(buffer_.data(), experts_); }
  const void* device_address() const { return buffer_.data(); }
  const TelemetryIdentity& identity() const { return identity_; }
  int experts() const { return experts_; }

 private:
  TelemetryIdentity identity_;
  int experts_;
  DeviceBuffer buffer_;
  std::vector<std::byte> staging_;  // source of the last enqueued copy, alive until drained
};

}  // namespace moe
