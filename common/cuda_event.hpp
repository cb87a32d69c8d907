#pragma once
#include <cuda_runtime_api.h>

#include "common/cuda_check.hpp"

namespace moe {

// Owns one CUDA event. Timing events keep the default flags (timing enabled, no blocking sync).
class CudaEvent {
 public:
  CudaEvent() { MOE_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~CudaEvent() {
    if (event_) cudaEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream) { MOE_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  cudaEvent_t handle() const { return event_; }

  // Milliseconds from `start` to this event; both must have completed (caller drained).
  float elapsed_ms_since(const CudaEvent& start) const {
    float ms = 0.f;
    MOE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace moe
