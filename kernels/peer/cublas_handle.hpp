#pragma once
// A cuBLAS handle (cublasCreate / cublasDestroy) bound to one stream. It keeps its library
// loaded for as long as it lives.
#include <cuda_runtime_api.h>

#include <memory>

#include "kernels/peer/cublas_library.hpp"

namespace moe::kernels::peer {

class CublasHandle {
 public:
  CublasHandle(std::shared_ptr<const CublasLibrary> library, cudaStream_t stream);
  ~CublasHandle();  // a failed destroy is reported on stderr, never thrown
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }
  cudaStream_t stream() const { return stream_; }
  const CublasLibrary& library() const { return *library_; }

 private:
  std::shared_ptr<const CublasLibrary> library_;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace moe::kernels::peer
