#include "reports/case_file.hpp"

#include "common/json_file.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include "common/errors.hpp"

namespace moe::report {

using nlohmann::json;

namespace {

const std::set<std::string> kTopFields{"schema",      "schema_version", "name",
                                       "description", "reproduces",     "probe",
                                       "run",         "expected_verdict"};
const std::set<std::string> kRunFields{"shapes",    "m",          "weight_formats", "modes",
                                       "seed",      "mutation",   "min_samples",    "max_samples",
                                       "max_noise_pct", "min_time_s", "timeout_s",  "l2",
                                       "warmup",    "copy_bytes", "engine"};

std::string list(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// Field access that names the field and the rule in every error.
class Fields {
 public:
  Fields(const json& j, std::string origin, std::string prefix,
         const std::set<std::string>& known)
      : j_(j), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!j.is_object()) fail(prefix_.empty() ? "the file" : name(""), "must be an object", j);
    for (const auto& [key, value] : j.items())
      if (!known.contains(key))
        throw UsageError(origin_ + ": unknown field \"" + prefix_ + key + "\"; valid: " +
                         list(known));
  }

  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  const json& require(const std::string& key) const {
    if (!j_.contains(key)) throw UsageError(origin_ + ": field \"" + name(key) + "\" is missing");
    return j_.at(key);
  }

  std::string string(const std::string& key) const {
    const json& v = require(key);
    if (!v.is_string()) fail(name(key), "must be a string", v);
    return v.get<std::string>();
  }

  std::string string_or(const std::string& key, std::string fallback) const {
    return j_.contains(key) ? string(key) : fallback;
  }

  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
    const json& v = require(key);
    if (!v.is_number_integer()) fail(name(key), "must be an integer", v);
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi)
      fail(name(key), "is out of range " + std::to_string(lo) + ".." + std::to_string(hi), v);
    return x;
  }

  double number(const std::string& key, double lo, double hi) const {
    const json& v = require(key);
    if (!v.is_number()) fail(name(key), "must be a number", v);
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi))
      fail(name(key), "is out of range " + std::to_string(lo) + ".." + std::to_string(hi), v);
    return x;
  }

  const json& array(const std::string& key) const {
    const json& v = require(key);
    if (!v.is_array()) fail(name(key), "must be an array", v);
    return v;
  }

  std::vector<std::string> strings_from(const std::string& key,
                                        const std::set<std::string>& valid) const {
    std::vector<std::string> out;
    const json& a = array(key);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string where = name(key) + "[" + std::to_string(i) + "]";
      if (!a[i].is_string()) fail(where, "must be a string", a[i]);
      const std::string s = a[i].get<std::string>();
      if (!valid.contains(s))
        throw UsageError(origin_ + ": field \"" + where + "\" = \"" + s +
                         "\" is not valid; valid: " + list(valid));
      out.push_back(s);
    }
    return out;
  }

  std::string name(const std::string& key) const { return prefix_ + key; }

  [[noreturn]] void fail(const std::string& field, const std::string& rule,
                         const json& value) const {
    throw UsageError(origin_ + ": field \"" + field + "\" " + rule + ", got " + value.dump());
  }

 private:
  const json& j_;
  std::string origin_;
  std::string prefix_;
};

}  // namespace

CaseFile parse_case_file(const json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("schema") || j.at("schema") != kCaseSchemaName)
    throw UsageError(origin + " is not a moebench case file (field \"schema\" must be \"" +
                     std::string(kCaseSchemaName) + "\")");
  const Fields top(j, origin, "", kTopFields);
  const std::int64_t version = top.integer("schema_version", 1, INT32_MAX);
  if (version > kCaseSchemaVersion)
    throw UsageError(origin + " has case schema version " + std::to_string(version) +
                     "; this moebench reads up to " + std::to_string(kCaseSchemaVersion) +
                     ": use a newer moebench");
  CaseFile c;
  c.name = top.string("name");
  if (c.name.empty()) top.fail("name", "must not be empty", j.at("name"));
  c.description = top.string_or("description", "");
  c.reproduces = top.string("reproduces");
  c.probe = top.string("probe");
  const std::string expected = top.string("expected_verdict");
  if (expected != "PASS" && expected != "FAIL" && expected != "INCONCLUSIVE")
    throw UsageError(origin + ": field \"expected_verdict\" = \"" + expected +
                     "\" is not valid; valid: PASS, FAIL, INCONCLUSIVE");
  c.expected_verdict = verdict_from_string(expected);

  const Fields run(top.require("run"), origin, "run.", kRunFields);
  if (run.has("shapes")) {
    const json& shapes = run.array("shapes");
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      if (!shapes[i].is_string() && !shapes[i].is_object())
        run.fail("run.shapes[" + std::to_string(i) + "]",
                 "must be a shape name, a path or a shape object", shapes[i]);
      c.shapes.push_back(shapes[i]);
    }
  }
  if (run.has("m")) {
    const json& ms = run.array("m");
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const std::string where = "run.m[" + std::to_string(i) + "]";
      if (!ms[i].is_number_integer()) run.fail(where, "must be an integer", ms[i]);
      const auto m = ms[i].get<std::int64_t>();
      if (m < 1 || m > 65536) run.fail(where, "is out of range 1..65536", ms[i]);
      c.ms.push_back(static_cast<int>(m));
    }
  }
  if (run.has("weight_formats")) c.weight_formats = run.strings_from("weight_formats", {"bf16", "int4"});
  if (run.has("modes")) c.modes = run.strings_from("modes", {"eager", "graph"});
  if (run.has("seed")) c.seed = static_cast<std::uint64_t>(run.integer("seed", 0, INT64_MAX));
  if (run.has("mutation")) c.mutation = run.string("mutation");
  if (run.has("engine")) {
    c.engine = run.string("engine");
    if (c.engine->empty())
      throw UsageError(origin + ": field \"run.engine\" is empty; give an adapter library's file name "
                       "(libNAME.so) or a path relative to the case file");
  }
  if (run.has("min_samples")) c.min_samples = run.integer("min_samples", 1, 1000000);
  if (run.has("max_samples")) c.max_samples = run.integer("max_samples", 1, 1000000);
  if (run.has("copy_bytes")) c.copy_bytes = run.integer("copy_bytes", 0, INT64_MAX);
  if (run.has("max_noise_pct")) c.max_noise_pct = run.number("max_noise_pct", 0, 100);
  if (run.has("min_time_s")) c.min_time_s = run.number("min_time_s", 0, 3600);
  if (run.has("timeout_s")) c.timeout_s = run.number("timeout_s", 0, 86400);
  if (run.has("warmup")) c.warmup = static_cast<int>(run.integer("warmup", 0, 1000));
  if (run.has("l2")) {
    c.l2 = run.string("l2");
    if (*c.l2 != "cold" && *c.l2 != "hot")
      throw UsageError(origin + ": field \"run.l2\" = \"" + *c.l2 +
                       "\" is not valid; valid: cold, hot");
  }
  return c;
}

CaseFile load_case_file(const std::string& path) {
  return parse_case_file(read_json_file(path, "case file"), "case file '" + path + "'");
}

json to_json(const CaseFile& c) {
  json run{{"shapes", c.shapes},
           {"m", c.ms},
           {"weight_formats", c.weight_formats},
           {"modes", c.modes},
           {"seed", c.seed},
           {"mutation", c.mutation ? json(*c.mutation) : json(nullptr)}};
  if (c.min_samples) run["min_samples"] = *c.min_samples;
  if (c.max_samples) run["max_samples"] = *c.max_samples;
  if (c.copy_bytes) run["copy_bytes"] = *c.copy_bytes;
  if (c.max_noise_pct) run["max_noise_pct"] = *c.max_noise_pct;
  if (c.min_time_s) run["min_time_s"] = *c.min_time_s;
  if (c.timeout_s) run["timeout_s"] = *c.timeout_s;
  if (c.warmup) run["warmup"] = *c.warmup;
  if (c.l2) run["l2"] = *c.l2;
  if (c.engine) run["engine"] = *c.engine;
  return json{{"schema", kCaseSchemaName},
              {"schema_version", kCaseSchemaVersion},
              {"name", c.name},
              {"description", c.description},
              {"reproduces", c.reproduces},
              {"probe", c.probe},
              {"run", run},
              {"expected_verdict", to_string(c.expected_verdict)}};
}

}  // namespace moe::report
