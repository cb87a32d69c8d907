#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/errors.hpp"

namespace moe {

// A drain was asked for while the stream was being captured into a graph. Its own type so a
// probe can tell "something synchronised inside the capture" (a FAIL of the engine) from any
// other error (probe capture-replay, check no_sync_inside_capture).
class SyncInsideCaptureError : public Error {
 public:
  SyncInsideCaptureError();
};

// The engine's work queue. Two different operations, on purpose (docs/bugs.md, bug 2):
//  - synchronize(): the engine's optional, *deferred* barrier. Under the default policy it is a
//    no-op, as it is in real engines; nothing that frees memory or times work may rely on it.
//  - drain(): the real barrier. Always waits for everything enqueued and surfaces errors.
class Stream {
 public:
  enum class SyncPolicy {
    deferred,  // synchronize() returns at once (default, like the engines the probes model)
    eager,     // synchronize() drains
  };

  explicit Stream(SyncPolicy policy = SyncPolicy::deferred);
  ~Stream();  // does not wait: owners of memory drain before freeing it
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t handle() const { return stream_; }
  SyncPolicy policy() const { return policy_; }

  void synchronize();
  // Raises SyncInsideCaptureError inside a graph capture (counted, then refused): a barrier
  // there would break the capture.
  void drain();
  std::size_t drains() const { return drains_; }
  std::size_t drains_refused_in_capture() const { return refused_in_capture_; }
  // True while a graph capture is recording this stream: a drain there would break the capture.
  bool capturing() const;

 private:
  cudaStream_t stream_ = nullptr;
  SyncPolicy policy_;
  std::size_t drains_ = 0;
  std::size_t refused_in_capture_ = 0;
};

}  // namespace moe
