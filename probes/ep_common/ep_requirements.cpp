#include "probes/ep_common/ep_requirements.hpp"

#include "common/errors.hpp"
#include "engine/device.hpp"
#include "engine/ep/device_list.hpp"
#include "engine/ep/launch_env.hpp"
#if MOEBENCH_HAVE_NCCL
#include "engine/ep/nccl/nccl_library.hpp"
#endif

namespace moe::ep {

void check_multi_gpu_requirements(const std::vector<const ProbeInfo*>& probes, const RunOptions& options) {
  const ProbeInfo* first = nullptr;
  for (const ProbeInfo* p : probes)
    if (p->min_gpus > 1 && !first) first = p;
  if (!first) return;
  if (!first->not_built.empty())
    throw EnvironmentError(std::string(first->name) + ": this moebench was built without NCCL: " +
                           std::string(first->not_built));
#if MOEBENCH_HAVE_NCCL
  nccl();  // one line: libnccl.so.2 missing, with LD_LIBRARY_PATH
#endif
  if (!launch_env()) resolve_devices(options.devices, Device::count());
}

}  // namespace moe::ep
