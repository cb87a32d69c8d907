#include "engine/stream.hpp"

#include <cstdio>

#include "common/cuda_check.hpp"

namespace moe {

Stream::Stream(SyncPolicy policy) : policy_(policy) {
  // Non-blocking: the legacy default stream must not serialise against our work.
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (!stream_) return;
  // Destructors must not throw; a failed drain here is reported and the handle still released.
  const cudaError_t status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess)
    std::fprintf(stderr, "moebench: drain in ~Stream failed: %s\n", cudaGetErrorString(status));
  cudaStreamDestroy(stream_);
}

void Stream::synchronize() {
  if (policy_ == SyncPolicy::eager) drain();
}

void Stream::drain() {
  if (capturing())
    throw Error(ExitCode::probe_error, "drain called inside a graph capture (nothing may "
                                       "synchronise while capturing)");
  ++drains_;
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  MOE_CUDA_CHECK(cudaGetLastError());
}

bool Stream::capturing() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  MOE_CUDA_CHECK(cudaStreamIsCapturing(stream_, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace moe
