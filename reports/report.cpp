#include "reports/report.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "reports/metadata.hpp"
#include "reports/verdict.hpp"
#include "reports/report_validation.hpp"

namespace moe::report {

using nlohmann::json;

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::pass: return "PASS";
    case Verdict::fail: return "FAIL";
    case Verdict::inconclusive: return "INCONCLUSIVE";
    case Verdict::error: return "ERROR";
  }
  return "ERROR";
}

Verdict verdict_from_string(const std::string& s) {
  if (s == "PASS") return Verdict::pass;
  if (s == "FAIL") return Verdict::fail;
  if (s == "INCONCLUSIVE") return Verdict::inconclusive;
  if (s == "ERROR") return Verdict::error;
  throw UsageError("verdict '" + s + "' is not one of PASS, FAIL, INCONCLUSIVE, ERROR");
}

int severity(Verdict v) {
  switch (v) {
    case Verdict::pass: return 0;
    case Verdict::inconclusive: return 1;
    case Verdict::fail: return 2;
    case Verdict::error: return 3;
  }
  return 3;
}

Stats Measurement::gpu_time() const { return summarize(gpu_time_us); }
Stats Measurement::host_time() const { return summarize(host_time_us); }
Stats Measurement::host_time_with_cupti() const { return summarize(host_time_with_cupti_us); }
Stats Measurement::kernel_time() const { return summarize(kernel_time_us); }
Stats Measurement::kernel_busy() const { return summarize(kernel_busy_us); }

std::size_t Measurement::throttled_samples() const {
  std::size_t n = 0;
  for (bool t : throttled) n += t;
  return n;
}

std::string Measurement::throttling_note() const {
  const std::size_t n = throttled_samples();
  if (n == 0) return "";
  return std::to_string(n) + " of " + std::to_string(samples()) +
         " samples ran with the clocks throttled";
}

const std::vector<double>& Measurement::main_loop_host_time_us() const {
  return host_time_with_cupti_us.empty() ? host_time_us : host_time_with_cupti_us;
}

std::string CaseResult::key(bool with_fingerprint) const {
  std::ostringstream k;
  k << probe << '/' << name;
  if (shape) k << "/shape=" << *shape;
  if (m) k << "/m=" << *m;
  if (format) k << "/format=" << *format;
  if (mode) k << "/mode=" << *mode;
  if (mutation) k << "/mutation=" << *mutation;
  if (with_fingerprint && shape_fingerprint) k << "/dims=" << *shape_fingerprint;
  return k.str();
}

void CaseResult::require(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (std::find(required_evidence.begin(), required_evidence.end(), n) == required_evidence.end())
      required_evidence.emplace_back(n);
}

void CaseResult::prove(const std::string& name, bool proven, const std::string& why_not) {
  if (std::find(required_evidence.begin(), required_evidence.end(), name) == required_evidence.end())
    required_evidence.push_back(name);
  evidence[name] = proven;
  if (!proven && !why_not.empty()) evidence["why_not"][name] = why_not;
}

void CaseResult::conclude(const std::string& pass_reason) {
  const Decision d = decide(*this, pass_reason);
  verdict = d.verdict;
  reason = d.reason;
}

Verdict Report::overall() const {
  Verdict worst = Verdict::pass;
  for (const CaseResult& c : cases)
    if (severity(c.verdict) > severity(worst)) worst = c.verdict;
  return worst;
}

// ---- JSON ----------------------------------------------------------------------------------

void to_json(json& j, const Stats& s) {
  j = json{{"min", s.min}, {"p10", s.p10}, {"median", s.median}, {"p90", s.p90},
           {"max", s.max}, {"mean", s.mean}, {"rsd", s.rsd},       {"count", s.count}};
}

void from_json(const json& j, Stats& s) {
  j.at("min").get_to(s.min);
  j.at("p10").get_to(s.p10);
  j.at("median").get_to(s.median);
  j.at("p90").get_to(s.p90);
  j.at("max").get_to(s.max);
  j.at("mean").get_to(s.mean);
  j.at("rsd").get_to(s.rsd);
  j.at("count").get_to(s.count);
}

void to_json(json& j, const Measurement& m) {
  j = json{{"samples", m.samples()},
           {"l2", m.l2_mode},
           {"stop_reason", m.stop_reason},
           {"total_gpu_time_s", m.total_gpu_time_s},
           {"gpu_time_us", m.gpu_time()},
           {"host_time_us", m.host_time()},
           {"kernel_timing", m.kernel_timing},
           {"throttled_samples", m.throttled_samples()},
           {"throttle_reasons", m.throttle_reasons},
           {"l2_flushes", m.l2_flushes ? json(*m.l2_flushes) : json(nullptr)},
           {"raw", json{{"gpu_time_us", m.gpu_time_us},
                        {"host_time_us", m.host_time_us},
                        {"kernel_time_us", m.kernel_time_us},
                        {"kernel_count", m.kernel_count},
                        {"sm_clock_mhz", m.sm_clock_mhz},
                        {"throttled", m.throttled}}}};
  if (m.kernel_timing) {
    j["kernel_time_us"] = m.kernel_time();
    j["kernel_count"] = summarize(m.kernel_count);
    // Launch gaps and host-side stalls inside the window: event time with no kernel running.
    const std::vector<double>& in_kernels = m.time_in_kernels_us();
    std::vector<double> gap(m.gpu_time_us.size());
    for (std::size_t i = 0; i < gap.size() && i < in_kernels.size(); ++i)
      gap[i] = m.gpu_time_us[i] - in_kernels[i];
    j["launch_gap_us"] = summarize(gap);
    if (!m.kernel_busy_us.empty()) {
      j["kernel_busy_us"] = m.kernel_busy();
      j["raw"]["kernel_busy_us"] = m.kernel_busy_us;
    }
  }
  if (!m.sm_clock_mhz.empty()) j["sm_clock_mhz"] = summarize(m.sm_clock_mhz);
  if (const auto& o = m.l2_observed)
    j["l2_observed"] = json{{"samples_observed", o->samples_observed},
                            {"observe_every", o->observe_every},
                            {"lines", o->lines},
                            {"flushes_unfinished", o->flushes_unfinished},
                            {"evicted_fraction_median", o->evicted_fraction_median},
                            {"evicted_fraction_min", o->evicted_fraction_min},
                            {"cold_load_cycles_median", o->cold_load_cycles_median},
                            {"hot_load_cycles_median", o->hot_load_cycles_median}};
  // Optional (absent before the host pass and without kernel timing), so older readers and
  // older reports both keep working.
  if (!m.host_time_with_cupti_us.empty()) {
    j["host_time_with_cupti_us"] = m.host_time_with_cupti();
    j["raw"]["host_time_with_cupti_us"] = m.host_time_with_cupti_us;
  }
}

void from_json(const json& j, Measurement& m) {
  const json& raw = j.at("raw");
  raw.at("gpu_time_us").get_to(m.gpu_time_us);
  raw.at("host_time_us").get_to(m.host_time_us);
  m.host_time_with_cupti_us.clear();
  if (raw.contains("host_time_with_cupti_us"))
    raw.at("host_time_with_cupti_us").get_to(m.host_time_with_cupti_us);
  raw.at("kernel_time_us").get_to(m.kernel_time_us);
  m.kernel_busy_us.clear();
  if (raw.contains("kernel_busy_us")) raw.at("kernel_busy_us").get_to(m.kernel_busy_us);
  raw.at("kernel_count").get_to(m.kernel_count);
  raw.at("sm_clock_mhz").get_to(m.sm_clock_mhz);
  raw.at("throttled").get_to(m.throttled);
  j.at("l2").get_to(m.l2_mode);
  j.at("stop_reason").get_to(m.stop_reason);
  j.at("total_gpu_time_s").get_to(m.total_gpu_time_s);
  j.at("kernel_timing").get_to(m.kernel_timing);
  j.at("throttle_reasons").get_to(m.throttle_reasons);
  m.l2_flushes.reset();  // absent or null in reports written before it was counted
  if (j.contains("l2_flushes") && !j.at("l2_flushes").is_null())
    m.l2_flushes = j.at("l2_flushes").get<std::size_t>();
  m.l2_observed.reset();  // absent without a flush and in reports written before it was observed
  if (j.contains("l2_observed")) {
    const json& o = j.at("l2_observed");
    L2Observed v;
    o.at("samples_observed").get_to(v.samples_observed);
    o.at("observe_every").get_to(v.observe_every);
    o.at("lines").get_to(v.lines);
    o.at("flushes_unfinished").get_to(v.flushes_unfinished);
    o.at("evicted_fraction_median").get_to(v.evicted_fraction_median);
    o.at("evicted_fraction_min").get_to(v.evicted_fraction_min);
    o.at("cold_load_cycles_median").get_to(v.cold_load_cycles_median);
    o.at("hot_load_cycles_median").get_to(v.hot_load_cycles_median);
    m.l2_observed = v;
  }
}

void to_json(json& j, const Metric& m) { j = json{{"value", m.value}, {"unit", m.unit}}; }
void from_json(const json& j, Metric& m) {
  j.at("value").get_to(m.value);
  j.at("unit").get_to(m.unit);
}

void to_json(json& j, const Check& c) {
  j = json{{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}};
}
void from_json(const json& j, Check& c) {
  j.at("name").get_to(c.name);
  j.at("passed").get_to(c.passed);
  j.at("detail").get_to(c.detail);
}

namespace {
template <class T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
template <class T>
void optional_from(const json& j, const char* key, std::optional<T>& out) {
  const json& v = j.at(key);
  if (v.is_null())
    out.reset();
  else
    out = v.get<T>();
}
}  // namespace

void to_json(json& j, const CaseResult& c) {
  j = json{{"key", c.key()},
           {"probe", c.probe},
           {"name", c.name},
           {"shape", optional_json(c.shape)},
           {"m", optional_json(c.m)},
           {"format", optional_json(c.format)},
           {"mode", optional_json(c.mode)},
           {"mutation", optional_json(c.mutation)},
           {"shape_fingerprint", optional_json(c.shape_fingerprint)},
           {"seed", c.seed},
           {"verdict", to_string(c.verdict)},
           {"reason", c.reason},
           {"metrics", c.metrics},
           {"measurements", c.measurements},
           {"checks", c.checks},
           {"evidence", c.evidence},
           {"required_evidence", c.required_evidence},
           {"parameters", c.parameters}};
}

void from_json(const json& j, CaseResult& c) {
  j.at("probe").get_to(c.probe);
  j.at("name").get_to(c.name);
  optional_from(j, "shape", c.shape);
  optional_from(j, "m", c.m);
  optional_from(j, "format", c.format);
  optional_from(j, "mode", c.mode);
  optional_from(j, "mutation", c.mutation);
  c.shape_fingerprint.reset();  // optional: absent in reports from before it
  if (j.contains("shape_fingerprint")) optional_from(j, "shape_fingerprint", c.shape_fingerprint);
  j.at("seed").get_to(c.seed);
  c.verdict = verdict_from_string(j.at("verdict").get<std::string>());
  j.at("reason").get_to(c.reason);
  j.at("metrics").get_to(c.metrics);
  j.at("measurements").get_to(c.measurements);
  j.at("checks").get_to(c.checks);
  c.evidence = j.at("evidence");
  // Absent in reports written before verdicts needed evidence.
  c.required_evidence.clear();
  if (j.contains("required_evidence")) j.at("required_evidence").get_to(c.required_evidence);
  c.parameters = j.at("parameters");
}

void to_json(json& j, const Report& r) {
  j = json{{"schema", kSchemaName},
           {"schema_version", r.schema_version},
           {"tool", r.tool},
           {"invocation", r.invocation},
           {"environment", r.environment},
           {"options", r.options},
           {"overall", to_string(r.overall())},
           {"cases", r.cases},
           {"extra", r.extra}};
}

void from_json(const json& j, Report& r) {
  j.at("schema_version").get_to(r.schema_version);
  r.tool = j.at("tool");
  r.invocation = j.at("invocation");
  r.environment = j.at("environment");
  r.options = j.at("options");
  j.at("cases").get_to(r.cases);
  r.extra = j.value("extra", json::object());
}

Report load_report(const std::string& path) {
  check_report_size(path);  // before a byte is parsed
  scan_raw_series(path);    // impossible samples, in constant memory
  json j = read_json_file(path, "report");
  // Compared as JSON: json::value() would throw its own type_error on a non-string "schema".
  if (!j.is_object() || !j.contains("schema") || j.at("schema") != kSchemaName)
    throw UsageError("'" + path + "' is not a moebench report (field \"schema\" must be \"" +
                     std::string(kSchemaName) + "\")");
  if (!j.contains("schema_version") || !j.at("schema_version").is_number_integer())
    throw UsageError("report '" + path + "': field \"schema_version\" must be an integer");
  // Compared as written (64-bit, unsigned kept unsigned) so a huge version cannot wrap to 1.
  const json& version = j.at("schema_version");
  const bool newer = version.is_number_unsigned()
                         ? version.get<std::uint64_t>() > static_cast<std::uint64_t>(kSchemaVersion)
                         : version.get<std::int64_t>() > kSchemaVersion;
  if (newer)
    throw UsageError("report '" + path + "' has schema version " + version.dump() +
                     "; this moebench reads up to " + std::to_string(kSchemaVersion) +
                     ": use a newer moebench");
  if (version.get<std::int64_t>() < 1)
    throw UsageError("report '" + path + "': field \"schema_version\" = " + version.dump() +
                     " must be at least 1");
  try {
    check_metadata_types(j);
    // Case by case, each freed once read and validated: the document and the report are not
    // both held whole.
    json cases = std::move(j.at("cases"));
    j["cases"] = json::array();
    Report r = j.get<Report>();
    if (!cases.is_array())
      throw UsageError("field \"cases\" must be an array, got " + std::string(cases.type_name()));
    r.cases.reserve(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      r.cases.push_back(cases[i].get<CaseResult>());
      validate_case(r.cases.back(), cases[i], i, path);
      cases[i] = nullptr;
    }
    return r;
  } catch (const json::exception& e) {
    throw UsageError("report '" + path + "' has a missing or mistyped field: " + e.what());
  } catch (const UsageError& e) {  // a bad value inside a field (a verdict name): say where
    throw UsageError("report '" + path + "': " + e.what());
  }
}

}  // namespace moe::report
