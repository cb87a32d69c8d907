#include "common/nvidia_driver.hpp"

#include <dlfcn.h>

namespace moe {

namespace {
std::string cuda_version_text(int v) {  // CUDA encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

NvidiaDriver probe_nvidia_driver() {
  NvidiaDriver d;
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    d.libcuda = true;
    dlclose(cuda);
  }
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml) {
    d.why_no_version = "libnvidia-ml.so.1 not found";
    return d;
  }
  using Init = int (*)();
  using Version = int (*)(char*, unsigned);
  auto init = reinterpret_cast<Init>(dlsym(nvml, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<Init>(dlsym(nvml, "nvmlShutdown"));
  auto version = reinterpret_cast<Version>(dlsym(nvml, "nvmlSystemGetDriverVersion"));
  if (!init || !shutdown || !version) {
    d.why_no_version = "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlSystemGetDriverVersion";
  } else if (const int rc = init(); rc != 0) {
    d.why_no_version = "nvmlInit failed (NVML error " + std::to_string(rc) + ")";
  } else {
    char buf[96] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
    if (const int rc = version(buf, sizeof buf); rc == 0)
      d.version = buf;
    else
      d.why_no_version = "nvmlSystemGetDriverVersion failed (NVML error " + std::to_string(rc) + ")";
    shutdown();
  }
  dlclose(nvml);
  return d;
}

std::string explain_no_cuda(const std::string& error_name, const std::string& error_text,
                            const NvidiaDriver& driver, int driver_cuda, int runtime_cuda) {
  const std::string runtime = "CUDA runtime " + cuda_version_text(runtime_cuda);
  if (error_name == "cudaErrorInsufficientDriver") {
    if (!driver.libcuda)
      return "no NVIDIA driver: libcuda.so.1 is not installed; install the NVIDIA driver";
    return "the NVIDIA driver" + (driver.version ? " " + *driver.version : std::string()) +
           (driver_cuda > 0 ? " (CUDA " + cuda_version_text(driver_cuda) + ")" : std::string()) +
           " is too old for this " + runtime + " (" + error_name + ": update the driver)";
  }
  return error_name + ": " + error_text +
         (driver.version ? " (NVIDIA driver " + *driver.version + ")" : std::string());
}

}  // namespace moe
