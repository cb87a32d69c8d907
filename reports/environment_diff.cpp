// What differs between the machines and builds of two reports. A comparison across different
// GPUs, drivers or measurement options is still printed, but the reader must be told first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "reports/case_summary.hpp"
#include "reports/compare.hpp"
#include "reports/statistics.hpp"
#include "reports/table.hpp"

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
    {"NVIDIA driver", "environment", "/software/nvidia_driver", false},
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

// Every figure is divided by the ceiling each run measured: past 1% apart the two runs' machines
// (or their memory clocks) differ, and time and GB/s move without any change to the code.
constexpr double kCeilingTolerance = 0.01;

void read_ceiling_difference(const Report& base, const Report& head,
                             std::vector<EnvironmentDifference>& out) {
  const double b = read_ceiling_gbps(base).value_or(0), h = read_ceiling_gbps(head).value_or(0);
  if (b <= 0 || h <= 0 || std::abs(h / b - 1) <= kCeilingTolerance) return;
  char change[32];
  std::snprintf(change, sizeof change, " (%+.1f%%)", 100 * (h / b - 1));
  out.push_back({"read ceiling (GB/s), more than 1% apart", fmt(b, 4), fmt(h, 4) + change,
                 false});
}

// The engine the probes ran (options.engine_adapter, absent for moebench's own): another
// engine's figures and verdicts are its own, and another build of one adapter (another SHA-256)
// is another engine.
std::string engine_text(const Report& r) {
  const json::json_pointer p("/engine_adapter");
  if (!r.options.is_object() || !r.options.contains(p)) return "moebench's own";
  const json& a = r.options.at(p);
  if (!a.is_object()) return text(a);
  return "adapter " + text(a.value("name", json(nullptr))) + " " + text(a.value("version", json(nullptr))) +
         " (engine ABI " + text(a.value("abi", json(nullptr))) + ", sha256 " +
         text(a.value("sha256", json(nullptr))).substr(0, 16) + ")";
}

void engine_adapter_difference(const Report& base, const Report& head, std::vector<EnvironmentDifference>& out) {
  const std::string b = engine_text(base), h = engine_text(head);
  if (b != h) out.push_back({"engine", b, h, false});
}

// The dimensions a shape object (options.shapes, a case's parameters.shape) records; its
// name, description and source say nothing about what ran.
json shape_dimensions(const json& shape) {
  json d = shape;
  for (const char* k : {"name", "description", "source"}) d.erase(k);
  return d;
}

std::map<std::string, json> shapes_by_name(const Report& r) {
  std::map<std::string, json> out;
  auto add = [&](const json& s) {
    if (s.is_object() && s.contains("name") && s.at("name").is_string())
      out.emplace(s.at("name").get<std::string>(), shape_dimensions(s));
  };
  if (r.options.is_object() && r.options.contains("shapes") && r.options.at("shapes").is_array())
    for (const json& s : r.options.at("shapes")) add(s);
  for (const CaseResult& c : r.cases)
    if (c.parameters.is_object() && c.parameters.contains("shape")) add(c.parameters.at("shape"));
  return out;
}

// One name, two sets of dimensions: the cases share a name but measured different layers.
void shape_differences(const Report& base, const Report& head,
                       std::vector<EnvironmentDifference>& out) {
  const auto b = shapes_by_name(base), h = shapes_by_name(head);
  for (const auto& [name, bd] : b) {
    auto it = h.find(name);
    if (it == h.end() || it->second == bd) continue;
    const json& hd = it->second;
    std::vector<std::string> fields;
    for (const json* d : {&bd, &hd})
      for (const auto& [field, _] : d->items())
        if (std::find(fields.begin(), fields.end(), field) == fields.end()) fields.push_back(field);
    std::string bs, hs;
    for (const std::string& field : fields) {
      const json bv = bd.value(field, json(nullptr)), hv = hd.value(field, json(nullptr));
      if (bv == hv) continue;
      bs += (bs.empty() ? "" : ", ") + field + " " + text(bv);
      hs += (hs.empty() ? "" : ", ") + field + " " + text(hv);
    }
    out.push_back({"dimensions of shape " + name, bs, hs, false});
  }
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
  // The engine switches (options.engine): a flipped switch runs other kernels, so its figures
  // are not the default build's. A report from before the block existed ran the defaults, but
  // which those were is unknown: it shows as "(not recorded)".
  const json::json_pointer engine("/engine");
  const json& be = base.options.contains(engine) ? base.options.at(engine) : json::object();
  const json& he = head.options.contains(engine) ? head.options.at(engine) : json::object();
  auto value_of = [](const json& block, const std::string& name) -> std::string {
    if (!block.is_object() || !block.contains(name)) return "(not recorded)";
    const json& e = block.at(name);
    return text(e.is_object() ? e.value("value", json(nullptr)) : e);
  };
  std::vector<std::string> names;
  for (const json* block : {&be, &he})
    if (block->is_object())
      for (const auto& [name, entry] : block->items())
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  if (!names.empty() && (be.empty() || he.empty())) {
    // One side recorded nothing: say so once rather than once per switch.
    out.push_back({"engine switches", be.empty() ? "(not recorded)" : "recorded",
                   he.empty() ? "(not recorded)" : "recorded", false});
  } else {
    for (const std::string& name : names) {
      const std::string bv = value_of(be, name), hv = value_of(he, name);
      if (bv != hv) out.push_back({"engine switch " + name, bv, hv, false});
    }
  }
  engine_adapter_difference(base, head, out);
  read_ceiling_difference(base, head, out);
  shape_differences(base, head, out);
  return out;
}

}  // namespace moe::report
