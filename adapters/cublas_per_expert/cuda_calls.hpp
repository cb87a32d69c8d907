#pragma once
// Checked CUDA and cuBLAS calls for the cuBLAS adapter: a failure raises CallFailed naming the
// call, the file and line, and the library's error string; the adapter's ABI functions turn it
// into MOEBENCH_ERROR_CUDA and that line (nothing raised crosses the C boundary).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace cublas_adapter {

class CallFailed : public std::runtime_error {
 public:
  CallFailed(const char* call, const char* file, int line, const std::string& why)
      : std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + why) {}
};

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw CallFailed(call, file, line, cudaGetErrorString(status));
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw CallFailed(call, file, line, cublasGetStatusString(status));
}

}  // namespace cublas_adapter

#define CUBLAS_ADAPTER_CUDA(call) ::cublas_adapter::check_cuda((call), #call, __FILE__, __LINE__)
#define CUBLAS_ADAPTER_CUBLAS(call) ::cublas_adapter::check_cublas((call), #call, __FILE__, __LINE__)
