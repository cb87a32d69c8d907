#pragma once
// The cuBLAS adapter's CUDA resources, each freed by its owner: device memory from cudaMalloc
// (allocated at create only, never inside forward) and the cuBLAS handle.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <utility>

#include "adapters/cublas_per_expert/cuda_calls.hpp"

namespace cublas_adapter {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes) : bytes_(bytes) {
    if (bytes_) CUBLAS_ADAPTER_CUDA(cudaMalloc(&ptr_, bytes_));
  }
  ~DeviceMemory() {
    // The owner waited for the work that uses it (the engine's destroy); a destructor cannot raise.
    if (ptr_)
      if (const cudaError_t e = cudaFree(ptr_); e != cudaSuccess)
        std::fprintf(stderr, "cublas-per-expert: cudaFree failed: %s\n", cudaGetErrorString(e));
  }
  DeviceMemory(DeviceMemory&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class CublasHandle {
 public:
  CublasHandle() { CUBLAS_ADAPTER_CUBLAS(cublasCreate(&handle_)); }
  ~CublasHandle() {
    if (const cublasStatus_t s = cublasDestroy(handle_); s != CUBLAS_STATUS_SUCCESS)
      std::fprintf(stderr, "cublas-per-expert: cublasDestroy failed: %s\n", cublasGetStatusString(s));
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace cublas_adapter
