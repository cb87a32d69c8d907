#pragma once
// Route telemetry: the record the route kernel accumulates into while it is armed, for a later
// residency decision (docs/bugs.md, bug 5). One record a layer, one device allocation:
//
//   RouteTelemetryHeader | bitmap: uint32 [ceil(E / 32)] | counts: uint32 [E]
//
// The kernel only accumulates (atomic add of an expert's count, atomic OR of its bit the first
// time it is counted, atomic add of the pairs to the total, sticky flags); it never resets. The
// header's epoch and identity are written by the host alone (arm, reset at a boundary), so a
// record that no reset reached, or another engine's record, is told apart at the snapshot.
// Host-only code includes this header: no CUDA headers.
#include <cstddef>
#include <cstdint>

namespace moe::kernels {

// Sticky flags of a window (header.flags).
constexpr std::uint32_t kTelemetryPoisoned = 1u;   // an expert id out of [0, E) was routed
constexpr std::uint32_t kTelemetryOverflowed = 2u; // a count would have wrapped: it saturated

struct RouteTelemetryHeader {
  std::uint64_t epoch;      // host-written: the window this record holds
  std::uint64_t engine;     // host-written identity: engine instance, layer, device
  std::int32_t layer;
  std::int32_t device;
  std::uint32_t experts;    // E: the length of counts
  std::uint32_t flags;      // kernel-written, sticky
  unsigned long long total; // kernel-written: (token, slot) pairs recorded, 64-bit: never wraps
};
static_assert(sizeof(RouteTelemetryHeader) == 40);

constexpr std::size_t route_telemetry_bitmap_words(int experts) {
  return (static_cast<std::size_t>(experts) + 31) / 32;
}
constexpr std::size_t route_telemetry_bitmap_offset() { return sizeof(RouteTelemetryHeader); }
constexpr std::size_t route_telemetry_counts_offset(int experts) {
  return route_telemetry_bitmap_offset() + 4 * route_telemetry_bitmap_words(experts);
}
// Bytes of one record (a multiple of 16).
constexpr std::size_t route_telemetry_bytes(int experts) {
  return (route_telemetry_counts_offset(experts) + 4 * static_cast<std::size_t>(experts) + 15) / 16 * 16;
}

// What the route kernel receives. Disarmed (the default) every pointer is null and the route
// kernels do exactly the work they do without telemetry: the branch is on a kernel parameter
// the host resolved once.
struct RouteTelemetry {
  RouteTelemetryHeader* header = nullptr;
  std::uint32_t* bitmap = nullptr;
  std::uint32_t* counts = nullptr;
  int experts = 0;
  // Fault point of probe route-telemetry: when `inject`, the pair (token 0, slot 0) of each call
  // is recorded as expert `inject_id` (any value, negative too) instead of its real one (routing
  // itself is unchanged), so an out-of-range id reaches the accumulation.
  bool inject = false;
  int inject_id = 0;
  // Mutation telemetry-count-wraps: a count that reaches 2^32 wraps silently (no saturation,
  // no overflow flag), as an unguarded atomicAdd does.
  bool counts_wrap = false;

  bool armed() const { return header != nullptr; }
};

// The view of a record allocated at `record` (route_telemetry_bytes(experts), 16-byte aligned).
inline RouteTelemetry route_telemetry_view(void* record, int experts) {
  RouteTelemetry t;
  auto* base = static_cast<char*>(record);
  t.header = reinterpret_cast<RouteTelemetryHeader*>(base);
  t.bitmap = reinterpret_cast<std::uint32_t*>(base + route_telemetry_bitmap_offset());
  t.counts = reinterpret_cast<std::uint32_t*>(base + route_telemetry_counts_offset(experts));
  t.experts = experts;
  return t;
}

}  // namespace moe::kernels
