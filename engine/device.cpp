#include "engine/device.hpp"

#include "common/cuda_check.hpp"
#include "common/nvidia_driver.hpp"

namespace moe {

int Device::count(std::string* why) {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) {
      // "Insufficient driver" is also the answer when there is no driver: tell them apart.
      int driver = 0, runtime = 0;
      (void)cudaDriverGetVersion(&driver);
      (void)cudaRuntimeGetVersion(&runtime);
      *why = explain_no_cuda(cudaGetErrorName(status), cudaGetErrorString(status),
                             probe_nvidia_driver(), driver, runtime);
    }
    return 0;
  }
  if (n == 0 && why) *why = "the driver reports no CUDA device";
  return n;
}

Device Device::open(int index) {
  std::string why;
  const int n = count(&why);
  if (n == 0) throw EnvironmentError("no usable CUDA GPU (" + why + ")");
  if (index < 0 || index >= n)
    throw UsageError("--device " + std::to_string(index) + " does not exist: valid are 0.." +
                     std::to_string(n - 1));
  Device d;
  d.index = index;
  MOE_CUDA_CHECK(cudaSetDevice(index));
  MOE_CUDA_CHECK(cudaGetDeviceProperties(&d.props, index));
  d.sm_count = d.props.multiProcessorCount;
  d.l2_bytes = static_cast<std::size_t>(d.props.l2CacheSize);
  return d;
}

std::size_t Device::free_memory() const {
  std::size_t free = 0, total = 0;
  MOE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

std::size_t Device::total_memory() const { return props.totalGlobalMem; }

}  // namespace moe
