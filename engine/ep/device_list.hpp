#pragma once
// `--devices` of the expert-parallel probes: "0,1", "all" or empty (all GPUs).
#include <string>
#include <vector>

namespace moe::ep {

// Empty for "all" or "". Raises UsageError for a malformed item or a repeated index.
std::vector<int> parse_device_list(const std::string& text);

// The list resolved against the machine's `visible` GPUs: all of them when empty. Raises
// EnvironmentError (exit 3) naming a GPU that is not there, or when fewer than two GPUs remain.
std::vector<int> resolve_devices(const std::vector<int>& asked, int visible);

}  // namespace moe::ep
