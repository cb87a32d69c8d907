#include "probes/ep_common/ep_not_built.hpp"

#include <string>

#include "common/errors.hpp"

namespace moe::ep {

void ep_not_built(std::string_view probe) {
#if MOEBENCH_HAVE_NCCL
  const std::string why = "(no reason: this build has NCCL)";
#else
  const std::string why = MOEBENCH_NCCL_MISSING_REASON;
#endif
  throw EnvironmentError(std::string(probe) + ": this moebench was built without NCCL: " + why +
                         "; rebuild with nccl.h in the CUDA toolkit or NCCL_ROOT");
}

}  // namespace moe::ep
