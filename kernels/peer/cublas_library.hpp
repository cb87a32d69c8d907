#pragma once
// cuBLAS loaded at run time (dlopen), never linked: the binary starts, and every probe runs, on a
// machine without it; only the vendor peer of probe bandwidth needs it. The header gives the
// types and the entry points' signatures; the addresses come from the loaded library.
#include <cublas_api.h>

#include <memory>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace moe::kernels::peer {

// The sonames tried, in order: CUDA 13's cuBLAS, then CUDA 12's (12.5 and newer have the
// grouped GEMM). Either comes with the CUDA toolkit or the nvidia-cublas wheel (its lib folder
// on LD_LIBRARY_PATH).
const std::vector<std::string>& default_cublas_names();

// A failed cuBLAS call: the call's name, the place and cuBLAS's status string.
class CublasError : public Error {
 public:
  CublasError(cublasStatus_t status, const std::string& what)
      : Error(ExitCode::probe_error, what), status_(status) {}
  cublasStatus_t status() const { return status_; }

 private:
  cublasStatus_t status_;
};

// One loaded cuBLAS: the library handle (closed on destruction) and the entry points the peer
// calls, each named as cuBLAS exports it.
class CublasLibrary {
 public:
  // The first of `names` that loads and has every entry point. Null when none does; `why` then
  // says, per name, what failed (dlerror, or the missing symbol).
  static std::shared_ptr<const CublasLibrary> load(const std::vector<std::string>& names,
                                                   std::string& why);
  ~CublasLibrary();
  CublasLibrary(const CublasLibrary&) = delete;
  CublasLibrary& operator=(const CublasLibrary&) = delete;

  const std::string& soname() const { return soname_; }
  // cublasGetProperty's major.minor.patch, e.g. "13.1.0".
  const std::string& version() const { return version_; }

  // Raises CublasError naming `call`, file and line and the status string unless `status` is
  // CUBLAS_STATUS_SUCCESS.
  void check(cublasStatus_t status, const char* call, const char* file, int line) const;

  decltype(&::cublasCreate_v2) cublasCreate_v2 = nullptr;
  decltype(&::cublasDestroy_v2) cublasDestroy_v2 = nullptr;
  decltype(&::cublasSetStream_v2) cublasSetStream_v2 = nullptr;
  decltype(&::cublasGetStatusString) cublasGetStatusString = nullptr;
  decltype(&::cublasGetProperty) cublasGetProperty = nullptr;
  decltype(&::cublasGemmGroupedBatchedEx) cublasGemmGroupedBatchedEx = nullptr;
  // The compute ceiling's dense GEMM; its C++ declaration is overloaded, so spelled out (the
  // compute-type form cuBLAS exports under this name).
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                 cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;

 private:
  explicit CublasLibrary(void* dl) : dl_(dl) {}
  void* dl_;
  std::string soname_, version_;
};

// Which cuBLAS this run can use, or why none: what was looked for and what failed.
struct CublasAvailability {
  std::shared_ptr<const CublasLibrary> library;  // null when none loaded
  std::string looked_for;                        // "libcublas.so.13, libcublas.so.12"
  std::string why_missing;                       // per name, what failed
  // One line for a user: what was looked for, why it failed, what to install.
  std::string missing_message() const;
};
CublasAvailability find_cublas(const std::vector<std::string>& names = default_cublas_names());

}  // namespace moe::kernels::peer

// Calls entry point `fn` of CublasLibrary `lib` and checks its status, naming `fn`.
#define MOE_CUBLAS_CALL(lib, fn, ...) \
  (lib).check((lib).fn(__VA_ARGS__), #fn, __FILE__, __LINE__)
