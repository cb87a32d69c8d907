#pragma once
// The NVIDIA driver as the machine has it, apart from what the CUDA runtime says. The runtime
// answers "CUDA driver version is insufficient for CUDA runtime version" both when the driver
// is older than the runtime and when there is no driver at all; libcuda.so.1 and NVML (both
// installed by the driver, loaded here at run time) tell the two apart.
#include <optional>
#include <string>

namespace moe {

struct NvidiaDriver {
  bool libcuda = false;                // libcuda.so.1 could be loaded
  std::optional<std::string> version;  // NVML's nvmlSystemGetDriverVersion, e.g. "580.95.05"
  std::string why_no_version;          // when version is empty: what failed
};

// Loads libcuda.so.1 and libnvidia-ml.so.1 (and unloads them): no device is touched.
NvidiaDriver probe_nvidia_driver();

// The reason CUDA is unusable, in words, from the runtime's error and the driver found.
// `driver_cuda` is cudaDriverGetVersion's answer (0 without a driver), `runtime_cuda`
// cudaRuntimeGetVersion's (13000 for 13.0).
std::string explain_no_cuda(const std::string& error_name, const std::string& error_text,
                            const NvidiaDriver& driver, int driver_cuda, int runtime_cuda);

}  // namespace moe
