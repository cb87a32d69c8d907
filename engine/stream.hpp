#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace moe {

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
  // Raises moe::Error inside a graph capture: a barrier there would break the capture.
  void drain();
  std::size_t drains() const { return drains_; }
  // True while a graph capture is recording this stream: a drain there would break the capture.
  bool capturing() const;

 private:
  cudaStream_t stream_ = nullptr;
  SyncPolicy policy_;
  std::size_t drains_ = 0;
};

}  // namespace moe
