#include "kernels/peer/cublas_library.hpp"

#include <dlfcn.h>

namespace moe::kernels::peer {

const std::vector<std::string>& default_cublas_names() {
  static const std::vector<std::string> names{"libcublas.so.13", "libcublas.so.12"};
  return names;
}

std::shared_ptr<const CublasLibrary> CublasLibrary::load(const std::vector<std::string>& names,
                                                         std::string& why) {
  why.clear();
  for (const std::string& name : names) {
    auto note = [&](const std::string& what) { why += (why.empty() ? "" : "; ") + name + ": " + what; };
    // RTLD_NODELETE: libcublas and libcublasLt allocate at load and never free; unloaded, those
    // blocks would be unreachable (LeakSanitizer reports them), and unloading gains nothing.
    void* dl = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!dl) {
      const char* e = dlerror();
      note(e ? e : "not found");
      continue;
    }
    std::shared_ptr<CublasLibrary> lib(new CublasLibrary(dl));  // closes `dl` if we give up
    lib->soname_ = name;
    std::string missing;
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(dl, symbol));
      if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
    };
    bind(lib->cublasCreate_v2, "cublasCreate_v2");
    bind(lib->cublasDestroy_v2, "cublasDestroy_v2");
    bind(lib->cublasSetStream_v2, "cublasSetStream_v2");
    bind(lib->cublasGetStatusString, "cublasGetStatusString");
    bind(lib->cublasGetProperty, "cublasGetProperty");
    bind(lib->cublasGemmGroupedBatchedEx, "cublasGemmGroupedBatchedEx");
    bind(lib->cublasGemmEx, "cublasGemmEx");
    if (!missing.empty()) {
      note("lacks " + missing + " (the grouped GEMM needs cuBLAS 12.5 or newer)");
      continue;
    }
    int v[3] = {0, 0, 0};
    const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
    for (int i = 0; i < 3; ++i) MOE_CUBLAS_CALL(*lib, cublasGetProperty, parts[i], &v[i]);
    lib->version_ = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
    return lib;
  }
  return nullptr;
}

CublasLibrary::~CublasLibrary() { dlclose(dl_); }

void CublasLibrary::check(cublasStatus_t status, const char* call, const char* file, int line) const {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const char* text = cublasGetStatusString ? cublasGetStatusString(status) : nullptr;
  throw CublasError(status, std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                                ": " + (text ? text : "cuBLAS status " + std::to_string(status)));
}

CublasAvailability find_cublas(const std::vector<std::string>& names) {
  CublasAvailability a;
  for (const std::string& n : names) a.looked_for += (a.looked_for.empty() ? "" : ", ") + n;
  a.library = CublasLibrary::load(names, a.why_missing);
  return a;
}

std::string CublasAvailability::missing_message() const {
  return "cuBLAS could not be loaded (looked for " + looked_for + ": " + why_missing +
         "); install cuBLAS from the CUDA toolkit, or the nvidia-cublas wheel with its lib "
         "folder on LD_LIBRARY_PATH";
}

}  // namespace moe::kernels::peer
