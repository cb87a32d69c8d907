#include "engine/ep/exchange_names.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace moe::ep {

std::vector<std::string_view> exchange_names() { return {"alltoall", "sendrecv", "lsa"}; }

std::vector<std::string_view> default_exchange_names() { return {"alltoall", "sendrecv"}; }

bool lsa_exchange_built() { return MOEBENCH_HAVE_NCCL_DEVICE_API != 0; }

std::string_view lsa_exchange_not_built_reason() {
#if MOEBENCH_HAVE_NCCL_DEVICE_API
  return {};
#else
  return MOEBENCH_NCCL_DEVICE_API_MISSING_REASON;
#endif
}

void validate_exchange_names(const std::vector<std::string>& names) {
  const std::vector<std::string_view> known = exchange_names();
  std::string valid;
  for (std::string_view k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) == known.end())
      throw UsageError("--exchange '" + names[i] + "' is not valid; valid: " + valid);
    if (std::find(names.begin(), names.begin() + i, names[i]) != names.begin() + i)
      throw UsageError("--exchange '" + names[i] + "' is given twice");
  }
  if (!lsa_exchange_built() && std::find(names.begin(), names.end(), "lsa") != names.end())
    throw EnvironmentError("--exchange lsa: this build has no lsa exchange: " +
                           std::string(lsa_exchange_not_built_reason()));
}

std::string describe_exchange_axis() {
  std::string line = "ep-step exchanges: alltoall (where the loaded NCCL has ncclAlltoAll) and sendrecv by default; lsa only with --exchange lsa";
  if (lsa_exchange_built()) return line + " (NCCL device API, one host's GPUs)";
  return line + ": not built, cannot run: " + std::string(lsa_exchange_not_built_reason());
}

}  // namespace moe::ep
