#include "engine/captured_graph.hpp"

#include <cstdio>

#include "common/cuda_check.hpp"
#include "engine/stream.hpp"

namespace moe {

CapturedGraph::CapturedGraph(Stream& stream, const std::function<void()>& enqueue, CaptureScope scope) {
  const cudaStreamCaptureMode mode =
      scope == CaptureScope::thread ? cudaStreamCaptureModeThreadLocal : cudaStreamCaptureModeGlobal;
  MOE_CUDA_CHECK(cudaStreamBeginCapture(stream.handle(), mode));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream.handle(), &partial);  // leaves the stream usable again
    if (partial) cudaGraphDestroy(partial);
    (void)cudaGetLastError();
    throw;
  }
  MOE_CUDA_CHECK(cudaStreamEndCapture(stream.handle(), &graph_));
  MOE_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &nodes_));
  MOE_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

CapturedGraph::~CapturedGraph() {
  if (exec_ && cudaGraphExecDestroy(exec_) != cudaSuccess)
    std::fprintf(stderr, "moebench: cudaGraphExecDestroy failed\n");
  if (graph_) cudaGraphDestroy(graph_);
}

void CapturedGraph::replay(Stream& stream) {
  MOE_CUDA_CHECK(cudaGraphLaunch(exec_, stream.handle()));
}

}  // namespace moe
