#pragma once
#include <cuda_runtime_api.h>

#include <functional>

namespace moe {

class Stream;

// Whose unsafe calls (a synchronisation, a plain cudaMalloc) fail a capture while it runs.
enum class CaptureScope {
  // Any thread's (CUDA's global mode): the default, so an engine whose helper thread
  // synchronises during its forward fails the capture instead of silently breaking it.
  process,
  // The capturing thread's only (thread-local mode): for ranks that are threads of one process,
  // or a rank with threads of its own (the abort watchdog, the rendezvous), whose calls must
  // not invalidate another thread's capture.
  thread,
};

// One instantiated CUDA graph, captured from work enqueued on a stream.
class CapturedGraph {
 public:
  // Records what `enqueue` puts on `stream`; an unsafe call inside (by `scope`) fails the
  // capture. If `enqueue` throws, the capture is ended and discarded and the exception
  // propagates.
  CapturedGraph(Stream& stream, const std::function<void()>& enqueue, CaptureScope scope = CaptureScope::process);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  void replay(Stream& stream);
  std::size_t nodes() const { return nodes_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::size_t nodes_ = 0;
};

}  // namespace moe
