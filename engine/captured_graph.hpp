#pragma once
#include <cuda_runtime_api.h>

#include <functional>

namespace moe {

class Stream;

// One instantiated CUDA graph, captured from work enqueued on a stream.
class CapturedGraph {
 public:
  // Records what `enqueue` puts on `stream` (global capture mode: any synchronising or
  // otherwise unsafe call inside fails the capture instead of silently breaking it). If
  // `enqueue` throws, the capture is ended and discarded and the exception propagates.
  CapturedGraph(Stream& stream, const std::function<void()>& enqueue);
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
