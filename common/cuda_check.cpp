#include "common/cuda_check.hpp"

#include <filesystem>

namespace moe {

namespace {
std::string describe(cudaError_t status, const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + std::filesystem::path(file).filename().string() +
         ":" + std::to_string(line) + ": " + cudaGetErrorName(status) + " (" +
         cudaGetErrorString(status) + ")";
}
}  // namespace

bool is_no_device_error(cudaError_t status) {
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorInvalidDevice:
      return true;
    default:
      return false;
  }
}

CudaError::CudaError(cudaError_t status, const char* call, const char* file, int line)
    : Error(is_no_device_error(status) ? ExitCode::environment
            : status == cudaErrorMemoryAllocation ? ExitCode::environment
                                                  : ExitCode::probe_error,
            describe(status, call, file, line)),
      status_(status) {}

bool CudaError::sticky() const {
  switch (status_) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Clear the non-sticky error state so the next call does not report this one again.
  (void)cudaGetLastError();
  throw CudaError(status, call, file, line);
}

}  // namespace moe
