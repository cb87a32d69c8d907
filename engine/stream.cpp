#include "engine/stream.hpp"

#include <cstdio>

#include "common/cuda_check.hpp"

namespace moe {

Stream::Stream(SyncPolicy policy) : policy_(policy) {
  // Non-blocking: the legacy default stream must not serialise against our work.
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  // No drain here: destroying a stream with work pending is legal (the driver releases it when
  // the work ends). Waiting is the job of whoever frees memory that work reads (MoeLayer,
  // Engine); a drain hidden here would mask exactly the bug drop-after-inflight looks for.
  if (stream_) cudaStreamDestroy(stream_);
}

void Stream::synchronize() {
  if (policy_ == SyncPolicy::eager) drain();
}

SyncInsideCaptureError::SyncInsideCaptureError()
    : Error(ExitCode::probe_error,
            "drain called inside a graph capture (nothing may synchronise while capturing)") {}

void Stream::drain() {
  if (capturing()) {
    ++refused_in_capture_;
    throw SyncInsideCaptureError();
  }
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
