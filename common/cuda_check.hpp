#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "common/errors.hpp"

namespace moe {

// A failed CUDA runtime call: keeps the call text, the place and the CUDA error string.
class CudaError : public Error {
 public:
  CudaError(cudaError_t status, const char* call, const char* file, int line);
  cudaError_t status() const { return status_; }
  // Sticky errors (illegal address, launch failure...) poison the context for the process.
  bool sticky() const;

 private:
  cudaError_t status_;
};

// No usable device or driver: maps to the environment exit code rather than a probe error.
bool is_no_device_error(cudaError_t status);

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);

}  // namespace moe

// Wraps every CUDA runtime call; throws moe::CudaError naming the call, file and line.
#define MOE_CUDA_CHECK(call)                                                   \
  do {                                                                         \
    const cudaError_t moe_status_ = (call);                                    \
    if (moe_status_ != cudaSuccess)                                            \
      ::moe::throw_cuda_error(moe_status_, #call, __FILE__, __LINE__);         \
  } while (0)

// After every kernel launch: launch-configuration errors surface here, not at the next call.
#define MOE_CHECK_LAUNCH(kernel_name)                                          \
  do {                                                                         \
    const cudaError_t moe_status_ = cudaGetLastError();                        \
    if (moe_status_ != cudaSuccess)                                            \
      ::moe::throw_cuda_error(moe_status_, "launch " kernel_name, __FILE__, __LINE__); \
  } while (0)
