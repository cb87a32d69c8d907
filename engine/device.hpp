#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace moe {

// The GPU a run uses, selected and checked once. Raises EnvironmentError with a one-line
// message when there is no driver, no device, or the index does not exist.
struct Device {
  int index = 0;
  cudaDeviceProp props{};
  int sm_count = 0;
  std::size_t l2_bytes = 0;

  static Device open(int index);
  // How many devices the driver reports; 0 with `why` filled when CUDA cannot be used at all.
  static int count(std::string* why = nullptr);

  std::size_t free_memory() const;
  std::size_t total_memory() const;
};

}  // namespace moe
