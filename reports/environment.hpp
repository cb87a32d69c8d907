#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include <nlohmann/json.hpp>

namespace moe::report {

// The "tool" block: what this binary is (version, git commit and dirty flag, build type,
// CUDA architectures, compilers). Needs no GPU.
nlohmann::json tool_info();

// The "environment" block for one device: GPU (name, UUID, compute capability, SMs, clocks,
// memory, bus width, L2, ECC), driver/runtime/CUPTI versions, host and OS. Host fields are
// always filled; GPU fields only when the device can be opened (else "gpu" holds the reason).
nlohmann::json capture_environment(int device_index);

// A GPU's UUID as nvidia-smi prints it ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx").
std::string uuid_string(const cudaUUID_t& uuid);

}  // namespace moe::report
