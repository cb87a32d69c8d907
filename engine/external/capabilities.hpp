#pragma once
// The optional capabilities of the engine ABI (MOEBENCH_CAP_*) by name, with the table
// functions each one promises, and the weight formats' bits: how reports, messages and the
// probes' requirements name them.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/moe/moe_types.hpp"
#include "moebench/engine_abi.h"

namespace moe::external {

struct CapabilityInfo {
  std::uint64_t bit;
  std::string_view name;   // "capture-safe-forward", as reports list it
  std::string_view macro;  // "MOEBENCH_CAP_CAPTURE_SAFE_FORWARD", as the header names it
  std::string_view meaning;
  std::vector<std::string_view> functions;  // table entries it promises are not null
};

std::span<const CapabilityInfo> all_capabilities();

// The names of the known bits set in `bits`, in the order above.
std::vector<std::string> capability_names(std::uint64_t bits);

// Whether the table entry called `function` ("read_route_counts") is set.
bool function_present(const moebench_adapter& table, std::string_view function);

// The bit of moebench_adapter::weight_formats for `format`, and moebench_layer_desc's code.
std::uint32_t format_bit(kernels::WeightFormat format);

}  // namespace moe::external
