#include "engine/external/capabilities.hpp"

namespace moe::external {

std::span<const CapabilityInfo> all_capabilities() {
  static const CapabilityInfo kAll[] = {
      {MOEBENCH_CAP_CAPTURE_SAFE_FORWARD, "capture-safe-forward", "MOEBENCH_CAP_CAPTURE_SAFE_FORWARD",
       "forward may be captured into a CUDA graph and replayed", {}},
      {MOEBENCH_CAP_ROUTE_COUNTS, "route-counts", "MOEBENCH_CAP_ROUTE_COUNTS",
       "the experts each layer routed to can be read and reset",
       {"read_route_counts", "reset_route_counts"}},
      {MOEBENCH_CAP_RESIDENCY, "residency", "MOEBENCH_CAP_RESIDENCY",
       "routed experts can be moved between device and host memory", {"set_residency"}},
      {MOEBENCH_CAP_DEVICE_ALLOCATOR, "device-allocator", "MOEBENCH_CAP_DEVICE_ALLOCATOR",
       "the engine takes its device memory from the allocator moebench lends it", {}},
  };
  return kAll;
}

std::vector<std::string> capability_names(std::uint64_t bits) {
  std::vector<std::string> names;
  for (const CapabilityInfo& c : all_capabilities())
    if (bits & c.bit) names.emplace_back(c.name);
  return names;
}

bool function_present(const moebench_adapter& t, std::string_view function) {
  if (function == "create") return t.create != nullptr;
  if (function == "forward") return t.forward != nullptr;
  if (function == "destroy") return t.destroy != nullptr;
  if (function == "check_layer") return t.check_layer != nullptr;
  if (function == "read_route_counts") return t.read_route_counts != nullptr;
  if (function == "reset_route_counts") return t.reset_route_counts != nullptr;
  if (function == "set_residency") return t.set_residency != nullptr;
  return false;
}

std::uint32_t format_bit(kernels::WeightFormat format) {
  return format == kernels::WeightFormat::int4 ? 1u << MOEBENCH_WEIGHTS_INT4 : 1u << MOEBENCH_WEIGHTS_BF16;
}

}  // namespace moe::external
