#pragma once
// The route kernels' side of route telemetry (route_telemetry.hpp): one routed (token, slot)
// pair accumulated into the record. Accumulate-only, so eager calls and graph replays of one
// window all add up, and no reset can hide inside a captured graph.
#include <cuda_runtime.h>

#include "kernels/moe/route_telemetry.hpp"

namespace moe::kernels::detail {

// Counts pair `id` in record `t` (armed). Out of range: the sticky poison bit, nothing else
// (neither the bitmap nor any count is touched). In range: the count, saturating at 2^32 - 1
// with the sticky overflow bit, and the expert's bit the first time it is counted.
//
// Saturation without a compare-and-swap loop: the add that finds 2^32 - 1 has wrapped the
// count; it ORs all ones back in. Adds racing between its add and its OR see small values and
// do not wrap; every later add that finds 2^32 - 1 repeats the OR, so once every thread is done
// (the record is read only at a boundary, after a drain) the count is 2^32 - 1.
__device__ __forceinline__ void record_routed_pair(const RouteTelemetry& t, int id) {
  if (id < 0 || id >= t.experts) {
    atomicOr(&t.header->flags, kTelemetryPoisoned);
    return;
  }
  const unsigned int old = atomicAdd(t.counts + id, 1u);
  if (old == 0u) {
    atomicOr(t.bitmap + (id >> 5), 1u << (id & 31));
  } else if (old == 0xFFFFFFFFu && !t.counts_wrap) {
    atomicOr(t.counts + id, 0xFFFFFFFFu);
    atomicOr(&t.header->flags, kTelemetryOverflowed);
  }
}

// The pairs of one call added to the window's total (one add a token, not a pair).
__device__ __forceinline__ void record_routed_total(const RouteTelemetry& t, unsigned int pairs) {
  atomicAdd(&t.header->total, static_cast<unsigned long long>(pairs));
}

}  // namespace moe::kernels::detail
