#include "reports/case_summary.hpp"

namespace moe::report {

using nlohmann::json;

namespace {
std::optional<double> metric(const CaseResult& c, const char* name) {
  auto it = c.metrics.find(name);
  if (it == c.metrics.end()) return std::nullopt;
  return it->second.value;
}

std::string str(const json& j, const char* pointer) {
  const json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p) || j.at(p).is_null()) return "";
  const json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : v.dump();
}
}  // namespace

CaseSummary summarize_case(const CaseResult& c) {
  CaseSummary s;
  auto it = c.measurements.find("main");
  if (it == c.measurements.end() && !c.measurements.empty()) it = c.measurements.begin();
  if (it != c.measurements.end()) {
    const Measurement& m = it->second;
    s.measurement = it->first;
    if (!m.gpu_time_us.empty()) s.gpu_time_us = m.gpu_time();
    if (!m.host_time_us.empty()) s.host_time_us = m.host_time().median;
    // Time kernels ran: the busy time where recorded (summed durations count overlapping
    // kernels twice), else the sum (older reports).
    if (m.kernel_timing && !m.kernel_busy_us.empty()) s.kernel_time_us = m.kernel_busy().median;
    else if (m.kernel_timing && !m.kernel_time_us.empty()) s.kernel_time_us = m.kernel_time().median;
  }
  s.gbps = metric(c, "gbps");
  s.pct_of_read_ceiling = metric(c, "pct_of_read_ceiling");
  return s;
}

std::string describe_gpu(const Report& r) {
  const json& e = r.environment;
  if (!e.is_object() || !e.contains("gpu")) return "unknown GPU";
  const json& g = e.at("gpu");
  if (g.is_object() && g.value("available", true) == false)
    return "no GPU (" + str(g, "/reason") + ")";
  std::string out = str(e, "/gpu/name");
  if (out.empty()) out = "unknown GPU";
  std::string detail;
  if (auto cc = str(e, "/gpu/compute_capability"); !cc.empty()) detail += "cc " + cc;
  if (auto sms = str(e, "/gpu/sm_count"); !sms.empty())
    detail += (detail.empty() ? "" : ", ") + sms + " SMs";
  if (!detail.empty()) out += " (" + detail + ")";
  if (auto d = str(e, "/software/cuda_driver"); !d.empty()) out += ", driver " + d;
  if (auto rt = str(e, "/software/cuda_runtime"); !rt.empty()) out += ", runtime " + rt;
  return out;
}

std::string describe_tool(const Report& r) {
  std::string out = "moebench " + str(r.tool, "/version");
  const std::string commit = str(r.tool, "/git_commit");
  if (!commit.empty()) out += " " + commit.substr(0, 12);
  if (r.tool.is_object() && r.tool.value("git_dirty", false)) out += "+dirty";
  std::string detail = str(r.tool, "/build_type");
  if (auto a = str(r.tool, "/cuda_architectures"); !a.empty())
    detail += (detail.empty() ? "" : ", ") + std::string("arch ") + a;
  if (!detail.empty()) out += " (" + detail + ")";
  return out;
}

std::optional<double> read_ceiling_gbps(const Report& r) {
  for (const CaseResult& c : r.cases)
    if (c.probe == "copy" && c.name == "read")
      if (auto v = metric(c, "read_ceiling_gbps")) return v;
  for (const CaseResult& c : r.cases)
    if (auto v = metric(c, "read_ceiling_gbps")) return v;
  return std::nullopt;
}

}  // namespace moe::report
