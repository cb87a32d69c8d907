#pragma once
#include <cuda_runtime_api.h>

namespace moe::measure {

// Holds a stream still while the host enqueues a sample, as nvbench's blocking kernel does:
// a one-thread kernel spins on a host-mapped flag, the host records the start event, enqueues
// the work and the stop event, then releases the flag. The GPU then runs the whole sample back
// to back, so GPU-event time excludes the host's launch latency, while the host clock still
// measures the enqueue (it starts irrespective of the blocked stream).
class StreamBlocker {
 public:
  // Name prefix of the spinning kernel, so kernel-time accounting can leave it out.
  static constexpr const char* kKernelName = "moebench_stream_blocker";

  StreamBlocker();
  ~StreamBlocker();
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  void block(cudaStream_t stream);
  void release();
  // True if the last block gave up waiting (the host took longer than the timeout to release):
  // that sample's GPU time includes the wait and must not be trusted.
  bool timed_out() const;

 private:
  volatile int* flag_ = nullptr;      // host-mapped: 0 hold, 1 release, 2 the kernel timed out
  int* device_flag_ = nullptr;
};

}  // namespace moe::measure
