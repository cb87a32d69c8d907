#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "engine/device.hpp"
#include "engine/device_allocator.hpp"
#include "engine/stream.hpp"
#include "kernels/bandwidth/bandwidth_kernels.hpp"
#include "probes/measure/l2_observation.hpp"
#include "reports/report.hpp"

namespace moe::measure {

enum class L2Mode { cold, hot };
const char* to_string(L2Mode m);

// Evicts the L2 before a cold sample by reading a buffer twice the L2's size, so the timed work
// reads its weights from HBM rather than from what the previous sample left in cache. Reading,
// not writing: a memset flush leaves up to an L2 of dirty lines whose write-back the first
// timed kernel would pay for (HBM bandwidth that a real decode step never spends).
//
// It also observes its own effect on some samples (l2_observation.hpp): a canary touched
// before the flush is timed after it, and a counter the flush's stream bumps once the flush
// ended is read at the same moment, so a flush that misses lines or has not finished when the
// sample begins shows in a measured figure.
class L2Flusher {
 public:
  L2Flusher(const Device& device, DeviceAllocator& allocator);
  ~L2Flusher();  // waits for a flush still running on the flusher's own stream (the mutation's)
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;

  void flush(cudaStream_t stream);

  // An observed sample: touch_canary before flush(), observe after the barrier that follows it.
  void touch_canary(cudaStream_t stream);
  void observe(cudaStream_t stream);
  // Starts a measurement's observations; collect() reads and judges them (`stream` drained).
  void begin_measurement() { observations_.clear(); }
  report::L2Observed collect();

 private:
  DeviceBuffer buffer_;
  DeviceBuffer xor_out_;  // the read's checksum, which nobody reads: it keeps the loads alive
  DeviceBuffer canary_;
  DeviceBuffer flush_counter_;  // bumped on the flush's stream once a flush ended
  DeviceBuffer readings_;       // kMaxObserved canary readings
  kernels::StreamLaunch launch_;
  std::unique_ptr<Stream> own_stream_;  // Mutation::l2_flush_other_stream's stream, made on first use
  unsigned flushes_issued_ = 0;
  std::vector<unsigned> observations_;  // per reading slot: the flushes issued before it
};

}  // namespace moe::measure
