#include "kernels/peer/cublas_handle.hpp"

#include <cstdio>

namespace moe::kernels::peer {

CublasHandle::CublasHandle(std::shared_ptr<const CublasLibrary> library, cudaStream_t stream)
    : library_(std::move(library)), stream_(stream) {
  MOE_CUBLAS_CALL(*library_, cublasCreate_v2, &handle_);
  try {
    MOE_CUBLAS_CALL(*library_, cublasSetStream_v2, handle_, stream_);
  } catch (...) {
    library_->cublasDestroy_v2(handle_);
    throw;
  }
}

CublasHandle::~CublasHandle() {
  if (const cublasStatus_t s = library_->cublasDestroy_v2(handle_); s != CUBLAS_STATUS_SUCCESS)
    std::fprintf(stderr, "warning: cublasDestroy_v2 failed at %s:%d: %s\n", __FILE__, __LINE__,
                 library_->cublasGetStatusString(s));
}

}  // namespace moe::kernels::peer
