#include "engine/ep/nvls_setting.hpp"

#include <cstdlib>

#include "common/errors.hpp"

namespace moe::ep {

std::string nvls_setting_problem(const char* value) {
  if (!value || std::string(value) == "0") return {};
  return "NCCL_NVLS_ENABLE='" + std::string(value) +
         "' in the environment: NVLink multicast stays off in moebench's expert-parallel runs "
         "(valid: unset or 0)";
}

void turn_off_nvls() {
  const char* value = std::getenv("NCCL_NVLS_ENABLE");
  if (const std::string problem = nvls_setting_problem(value); !problem.empty()) throw UsageError(problem);
  if (!value) ::setenv("NCCL_NVLS_ENABLE", "0", 0);
}

}  // namespace moe::ep
