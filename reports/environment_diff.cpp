// What differs between the machines and builds of two reports. A comparison across different
// GPUs, drivers or measurement options is still printed, but the reader must be told first.
#include <string>
#include <vector>

#include "reports/compare.hpp"

namespace moe::report {

using nlohmann::json;

namespace {

struct Field {
  const char* label;
  const char* section;  // top-level block of the report
  const char* pointer;  // JSON pointer inside it
  bool expected;        // differs by design in a comparison across commits
};

constexpr Field kFields[] = {
    {"moebench version", "tool", "/version", false},
    {"git commit", "tool", "/git_commit", true},
    {"uncommitted changes", "tool", "/git_dirty", false},
    {"build type", "tool", "/build_type", false},
    {"CUDA architectures", "tool", "/cuda_architectures", false},
    {"C++ compiler", "tool", "/cxx_compiler", false},
    {"CUDA compiler", "tool", "/cuda_compiler", false},
    {"GPU", "environment", "/gpu/name", false},
    {"GPU UUID", "environment", "/gpu/uuid", false},
    {"compute capability", "environment", "/gpu/compute_capability", false},
    {"SM count", "environment", "/gpu/sm_count", false},
    {"max SM clock (MHz)", "environment", "/gpu/max_sm_clock_mhz", false},
    {"max memory clock (MHz)", "environment", "/gpu/max_memory_clock_mhz", false},
    {"ECC", "environment", "/gpu/ecc_enabled", false},
    {"CUDA driver", "environment", "/software/cuda_driver", false},
    {"CUDA runtime", "environment", "/software/cuda_runtime", false},
    {"CUPTI", "environment", "/software/cupti_api", false},
    {"host", "environment", "/host/hostname", true},
    {"L2 mode", "options", "/l2", false},
    {"kernel timing", "options", "/kernel_timing", false},
    {"warm-up runs", "options", "/warmup", false},
    {"min samples", "options", "/min_samples", false},
    {"max noise", "options", "/max_noise", false},
    {"min time (s)", "options", "/min_time_s", false},
    {"timeout (s)", "options", "/timeout_s", false},
    {"host pass samples", "options", "/host_samples", false},
    {"seed", "options", "/seed", false},
    {"copy buffer bytes", "options", "/copy_bytes", false},
    {"mutation", "options", "/mutation", false},
};

const json& section(const Report& r, const std::string& name) {
  if (name == "tool") return r.tool;
  if (name == "environment") return r.environment;
  return r.options;
}

std::string text(const json& v) {
  if (v.is_null()) return "(none)";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

std::vector<EnvironmentDifference> environment_differences(const Report& base,
                                                           const Report& head) {
  std::vector<EnvironmentDifference> out;
  for (const Field& f : kFields) {
    const json::json_pointer p(f.pointer);
    const json& b = section(base, f.section);
    const json& h = section(head, f.section);
    const bool in_b = b.is_object() && b.contains(p);
    const bool in_h = h.is_object() && h.contains(p);
    if (!in_b && !in_h) continue;
    const json bv = in_b ? b.at(p) : json(nullptr);
    const json hv = in_h ? h.at(p) : json(nullptr);
    if (bv != hv) out.push_back({f.label, text(bv), text(hv), f.expected});
  }
  return out;
}

}  // namespace moe::report
