#include "reports/case_summary.hpp"

#include "reports/metadata.hpp"

namespace moe::report {

using nlohmann::json;

namespace {
std::optional<double> metric(const CaseResult& c, const char* name) {
  auto it = c.metrics.find(name);
  if (it == c.metrics.end()) return std::nullopt;
  return it->second.value;
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
    if (m.kernel_timing && !m.time_in_kernels_us().empty())
      s.kernel_time_us = summarize(m.time_in_kernels_us()).median;
  }
  s.gbps = metric(c, "gbps");
  s.pct_of_read_ceiling = metric(c, "pct_of_read_ceiling");
  return s;
}

std::string describe_gpu(const Report& r) {
  const json& e = r.environment;
  if (!e.is_object() || !e.contains("gpu")) return "unknown GPU";
  if (!metadata_flag(e, "/gpu/available", true))
    return "no GPU (" + metadata_text(e, "/gpu/reason") + ")";
  std::string out = metadata_text(e, "/gpu/name");
  if (out.empty()) out = "unknown GPU";
  std::string detail;
  if (auto cc = metadata_text(e, "/gpu/compute_capability"); !cc.empty()) detail += "cc " + cc;
  if (auto sms = metadata_text(e, "/gpu/sm_count"); !sms.empty())
    detail += (detail.empty() ? "" : ", ") + sms + " SMs";
  if (!detail.empty()) out += " (" + detail + ")";
  // The NVIDIA driver's version (NVML, absent in older reports), then the CUDA version that
  // driver supports, which is not the driver's version.
  if (auto d = metadata_text(e, "/software/nvidia_driver"); !d.empty()) out += ", driver " + d;
  if (auto d = metadata_text(e, "/software/cuda_driver"); !d.empty())
    out += ", driver CUDA " + d;
  if (auto rt = metadata_text(e, "/software/cuda_runtime"); !rt.empty()) out += ", runtime " + rt;
  return out;
}

std::string describe_tool(const Report& r) {
  std::string out = "moebench " + metadata_text(r.tool, "/version");
  const std::string commit = metadata_text(r.tool, "/git_commit");
  if (!commit.empty()) out += " " + commit.substr(0, 12);
  if (metadata_flag(r.tool, "/git_dirty", false)) out += "+dirty";
  std::string detail = metadata_text(r.tool, "/build_type");
  if (auto a = metadata_text(r.tool, "/cuda_architectures"); !a.empty())
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
