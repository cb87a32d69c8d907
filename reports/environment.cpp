#include "reports/environment.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/build_info.hpp"
#include "common/gpu_clocks.hpp"
#include "common/nvidia_driver.hpp"

namespace moe::report {

using nlohmann::json;

namespace {

std::string version_string(int v) {  // CUDA encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}


json host_info() {
  json h;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  h["hostname"] = name;
  utsname u{};
  if (uname(&u) == 0) {
    h["os"] = std::string(u.sysname) + " " + u.release;
    h["machine"] = u.machine;
  }
  h["cpu_count"] = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return h;
}

int attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return v;
}

json gpu_info(int device, std::string* why_not) {
  cudaDeviceProp p{};
  const cudaError_t status = cudaGetDeviceProperties(&p, device);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    // "Insufficient driver" is also the runtime's answer when there is no driver at all.
    int driver = 0, runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    *why_not = explain_no_cuda(cudaGetErrorName(status), cudaGetErrorString(status),
                               probe_nvidia_driver(), driver, runtime);
    return nullptr;
  }
  char pci[32] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, device) != cudaSuccess) {
    (void)cudaGetLastError();
    pci[0] = '\0';  // best effort: the report says "" rather than failing the run
  }
  json g{{"index", device},
         {"name", p.name},
         {"uuid", uuid_string(p.uuid)},
         {"pci_bus_id", pci},
         {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
         {"sm_count", p.multiProcessorCount},
         {"memory_bytes", p.totalGlobalMem},
         {"memory_bus_width_bits", p.memoryBusWidth},
         {"l2_bytes", p.l2CacheSize},
         {"ecc_enabled", p.ECCEnabled != 0},
         {"max_sm_clock_mhz", attribute(cudaDevAttrClockRate, device) / 1000},
         {"max_memory_clock_mhz", attribute(cudaDevAttrMemoryClockRate, device) / 1000}};
  GpuClocks clocks(pci);
  g["nvml"] = clocks.available();
  if (auto v = clocks.sm_clock_mhz()) g["sm_clock_mhz_now"] = *v;
  if (auto v = clocks.memory_clock_mhz()) g["memory_clock_mhz_now"] = *v;
  if (auto v = clocks.max_sm_clock_mhz()) g["max_sm_clock_mhz"] = *v;
  g["throttle_reasons_now"] = clocks.throttle_reasons();
  return g;
}

}  // namespace

std::string uuid_string(const cudaUUID_t& u) {
  char buf[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

json tool_info() {
  const BuildInfo& b = build_info();
  return json{{"name", "moebench"},
              {"version", b.version},
              {"git_commit", b.git_commit},
              {"git_dirty", b.git_dirty},
              {"build_type", b.build_type},
              {"cuda_architectures", b.cuda_architectures},
              {"cxx_compiler", b.cxx_compiler},
              {"cuda_compiler", b.cuda_compiler}};
}

json capture_environment(int device_index) {
  json env;
  env["host"] = host_info();
  json sw;
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);  // needs no device: cannot fail once linked
  sw["cuda_runtime"] = version_string(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    sw["cuda_driver"] = version_string(driver);
  else
    sw["cuda_driver"] = nullptr;
  // The driver's own version (NVML), which cuda_driver (the CUDA API version it supports) is
  // not: "580.95.05" beside "13.0".
  const NvidiaDriver nvidia = probe_nvidia_driver();
  if (nvidia.version)
    sw["nvidia_driver"] = *nvidia.version;
  else {
    sw["nvidia_driver"] = nullptr;
    sw["nvidia_driver_reason"] = nvidia.libcuda ? nvidia.why_no_version
                                                : "no NVIDIA driver (" + nvidia.why_no_version + ")";
  }
  std::uint32_t cupti = 0;
  if (cuptiGetVersion(&cupti) == CUPTI_SUCCESS) sw["cupti_api"] = cupti;
  env["software"] = sw;
  std::string why;
  json gpu = gpu_info(device_index, &why);
  if (gpu.is_null())
    env["gpu"] = json{{"available", false}, {"reason", why}};
  else {
    gpu["available"] = true;
    env["gpu"] = gpu;
  }
  (void)cudaGetLastError();
  return env;
}

}  // namespace moe::report
