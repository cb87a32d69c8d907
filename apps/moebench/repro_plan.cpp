#include "apps/moebench/repro_plan.hpp"

#include <fstream>
#include <map>
#include <set>

#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/sha256.hpp"
#include "engine/fault_injection.hpp"
#include "engine/shape.hpp"
#include "probes/probe.hpp"
#include "reports/case_file.hpp"
#include "reports/report_writer.hpp"

namespace moe::cli {

using nlohmann::json;

namespace {

// Runs `f`, prefixing any UsageError with where the bad value came from.
template <class F>
auto naming(const std::string& where, F&& f) {
  try {
    return f();
  } catch (const UsageError& e) {
    throw UsageError(where + ": " + e.what());
  }
}

// A shape given as an object becomes a shape file; a name or path is passed as it is.
std::string shape_spec(const json& shape, const std::string& where,
                       const std::filesystem::path& shape_dir) {
  if (shape.is_string()) return shape.get<std::string>();
  const Shape s = parse_shape_json(shape, where);  // validates before anything runs
  const std::filesystem::path file =
      shape_dir / ("shape-" + std::to_string(std::hash<std::string>{}(shape.dump())) + ".json");
  report::write_file_atomically(file.string(), s.to_json().dump(2) + "\n");
  return file.string();
}

// The `moebench run` line a person would type for `r`: the same arguments repro passes
// (run_arguments), with shapes by their names rather than the temporary files, and without the
// output options, which repro decides.
std::string describe(RunRequest r, const std::vector<std::string>& shape_labels) {
  r.shapes = shape_labels;
  const std::vector<std::string> args = run_arguments(r);
  std::string line = "moebench";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--format") {
      ++i;  // and its value
      continue;
    }
    if (args[i] == "--quiet") continue;
    line += " " + args[i];
  }
  return line;
}

// ---- case files ----------------------------------------------------------------------------

ReproPlan plan_from_case_file(const std::string& file, const std::filesystem::path& shape_dir,
                              RunRequest base) {
  const report::CaseFile c = report::load_case_file(file);
  const std::string origin = "case file '" + file + "'";
  naming(origin + ": field \"probe\"", [&] { return &probe_by_name(c.probe); });
  if (c.mutation)
    naming(origin + ": field \"run.mutation\"", [&] { return mutation_from_name(*c.mutation); });

  RunRequest r = std::move(base);
  r.probes = {c.probe};
  // The adapter the case names, unless --engine gives one (a user's own build of it wins).
  if (c.engine && r.engine.empty())
    r.engine = find_case_adapter(*c.engine, file, origin + ": field \"run.engine\"");
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) {
    const std::string where = origin + ": field \"run.shapes[" + std::to_string(i) + "]\"";
    r.shapes.push_back(shape_spec(c.shapes[i], where, shape_dir));
    labels.push_back(c.shapes[i].is_string() ? c.shapes[i].get<std::string>()
                                             : c.shapes[i].value("name", "?"));
  }
  r.ms = c.ms;
  r.weight_formats = c.weight_formats;
  r.modes = c.modes;
  r.seed = c.seed;
  r.mutation = c.mutation.value_or("");
  if (c.min_samples) r.min_samples = *c.min_samples;
  if (c.max_samples) r.max_samples = *c.max_samples;
  if (c.max_noise_pct) r.max_noise_pct = *c.max_noise_pct;
  if (c.min_time_s) r.min_time_s = *c.min_time_s;
  if (c.timeout_s) r.timeout_s = *c.timeout_s;
  if (c.l2) r.l2 = *c.l2;
  if (c.warmup) r.warmup = *c.warmup;
  if (c.copy_bytes) r.copy_bytes = *c.copy_bytes;

  ReproPlan plan;
  plan.source = file;
  plan.source_kind = "case";
  plan.source_document = report::to_json(c);
  plan.run_descriptions.push_back(describe(r, labels));
  plan.runs.push_back(std::move(r));
  plan.expected.push_back({c.name, c.expected_verdict});
  plan.compare_overall = true;
  return plan;
}

// ---- reports -------------------------------------------------------------------------------

// Typed reads of report.options; a field a report lacks keeps the run default.
class RecordedOptions {
 public:
  RecordedOptions(const json& options, std::string origin)
      : o_(options), origin_(std::move(origin)) {
    if (!o_.is_object())
      throw UsageError(origin_ + ": field \"options\" must be an object, got " + o_.dump());
  }

  const json* get(const char* key, bool (json::*is)() const noexcept, const char* type) const {
    if (!o_.contains(key) || o_.at(key).is_null()) return nullptr;
    const json& v = o_.at(key);
    if (!(v.*is)())
      throw UsageError(origin_ + ": field \"options." + key + "\" must be " + type + ", got " +
                       v.dump());
    return &v;
  }

  template <class T>
  void read(const char* key, T& out) const {
    const json* v = nullptr;
    if constexpr (std::is_same_v<T, bool>)
      v = get(key, &json::is_boolean, "true or false");
    else if constexpr (std::is_same_v<T, std::string>)
      v = get(key, &json::is_string, "a string");
    else if constexpr (std::is_integral_v<T>)
      v = get(key, &json::is_number_integer, "an integer");
    else
      v = get(key, &json::is_number, "a number");
    if (!v) return;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      if constexpr (std::is_unsigned_v<T>)
        if (v->get<long long>() < 0)
          throw UsageError(origin_ + ": field \"options." + key + "\" must not be negative, got " +
                           v->dump());
    out = v->get<T>();
  }

  template <class T>
  std::vector<T> list(const char* key) const {
    std::vector<T> out;
    const json* v = get(key, &json::is_array, "an array");
    if (!v) return out;
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& x = (*v)[i];
      const bool ok = std::is_same_v<T, std::string> ? x.is_string() : x.is_number_integer();
      if (!ok)
        throw UsageError(origin_ + ": field \"options." + key + "[" + std::to_string(i) +
                         "]\" must be " +
                         (std::is_same_v<T, std::string> ? "a string" : "an integer") + ", got " +
                         x.dump());
      out.push_back(x.get<T>());
    }
    return out;
  }

  const json& raw() const { return o_; }

 private:
  const json& o_;
  std::string origin_;
};

ReproPlan plan_from_report(const std::string& file, const std::filesystem::path& shape_dir,
                           const RunRequest& base) {
  const report::Report rep = report::load_report(file);
  const std::string origin = "report '" + file + "'";
  if (rep.cases.empty())
    throw UsageError(origin + " has no cases: there is nothing to reproduce");
  const RecordedOptions o(rep.options, origin);

  RunRequest common = base;
  std::vector<std::string> labels;
  if (const json* shapes = o.get("shapes", &json::is_array, "an array")) {
    for (std::size_t i = 0; i < shapes->size(); ++i) {
      const json& s = (*shapes)[i];
      const std::string where = origin + ": field \"options.shapes[" + std::to_string(i) + "]\"";
      if (!s.is_object() && !s.is_string())
        throw UsageError(where + " must be a shape object or a name, got " + s.dump());
      common.shapes.push_back(shape_spec(s, where, shape_dir));
      labels.push_back(s.is_string() ? s.get<std::string>() : s.value("name", "?"));
    }
  }
  common.ms = o.list<int>("m");
  common.weight_formats = o.list<std::string>("weight_formats");
  common.modes = o.list<std::string>("modes");
  common.exchanges = o.list<std::string>("exchanges");  // absent: ep-step's default set
  o.read("l2", common.l2);
  o.read("allocator", common.allocator);
  bool kernel_timing = true;
  o.read("kernel_timing", kernel_timing);
  common.no_kernel_timing = !kernel_timing;
  o.read("warmup", common.warmup);
  o.read("min_samples", common.min_samples);
  double max_noise = common.max_noise_pct / 100;
  o.read("max_noise", max_noise);
  common.max_noise_pct = 100 * max_noise;
  o.read("min_time_s", common.min_time_s);
  o.read("timeout_s", common.timeout_s);
  o.read("max_samples", common.max_samples);
  o.read("host_samples", common.host_samples);
  o.read("seed", common.seed);
  // The expert-parallel probes' GPUs (absent in older reports, and empty for all of them).
  if (const std::vector<int> devices = o.list<int>("devices"); !devices.empty()) {
    common.devices.clear();
    for (int d : devices) common.devices += (common.devices.empty() ? "" : ",") + std::to_string(d);
  }
  o.read("copy_bytes", common.copy_bytes);
  o.read("max_layers", common.max_layers);
  o.read("barrier_reps", common.barrier_reps);
  // Telemetry and residency options (absent in older reports). The policy's are passed on only
  // when they were set: they are refused for runs without probe expert-residency.
  o.read("telemetry", common.telemetry);
  o.read("filter", common.filter);  // the cases a filtered run selected (absent: all)
  o.read("histogram", common.histogram);
  double hot_share = RunOptions{}.hot_share;
  o.read("hot_share", hot_share);
  if (hot_share != RunOptions{}.hot_share) common.hot_share = hot_share;
  std::size_t device_budget = 0;
  o.read("device_budget", device_budget);
  if (device_budget) common.device_budget = device_budget;
  bool stream_blocker = true;
  o.read("stream_blocker", stream_blocker);
  common.no_stream_blocker = !stream_blocker;
  // The engine switches the report ran with, as --switch (they win over this environment's).
  if (const json* engine = o.get("engine", &json::is_object, "an object")) {
    const EngineOptions recorded =
        naming(origin + ": field \"options.engine\"", [&] { return EngineOptions::from_json(*engine); });
    for (const EngineSwitch& s : engine_switches())
      common.switches.push_back(std::string(s.name) + "=" + recorded.value(s.name));
  }
  ReproPlan plan;
  // A run through an adapter reruns through one: the same file, or the user is told it differs.
  if (const json* adapter = o.get("engine_adapter", &json::is_object, "an object")) {
    const std::string name = adapter->value("name", "?") + " " + adapter->value("version", "?");
    const std::string sha = adapter->value("sha256", "");
    if (base.engine.empty())
      throw UsageError(origin + " ran through engine adapter " + name + " (sha256 " + sha +
                       "): give --engine PATH of that adapter to rerun it");
    std::error_code ec;
    if (std::filesystem::is_regular_file(base.engine, ec) && sha256_of_file(base.engine) != sha)
      plan.warnings.push_back("--engine '" + base.engine + "' is not the file the report ran through (" + name +
                              ", sha256 " + sha + "): the verdicts may differ for that reason");
  }
  std::string run_mutation;
  o.read("mutation", run_mutation);
  if (!run_mutation.empty())
    naming(origin + ": field \"options.mutation\"",
           [&] { return mutation_from_name(run_mutation); });

  // A mutation is active for a whole run, so cases recorded under different mutations (as
  // selftest records them) are rerun as one run per mutation, probes in recorded order.
  std::vector<std::string> mutation_order;
  std::map<std::string, std::vector<std::string>> probes_of;
  for (const report::CaseResult& c : rep.cases) {
    naming(origin + ": case " + c.key(), [&] { return &probe_by_name(c.probe); });
    const std::string mutation = c.mutation.value_or(run_mutation);
    if (c.mutation)
      naming(origin + ": case " + c.key() + ": field \"mutation\"",
             [&] { return mutation_from_name(mutation); });
    if (!probes_of.contains(mutation)) mutation_order.push_back(mutation);
    auto& probes = probes_of[mutation];
    if (std::find(probes.begin(), probes.end(), c.probe) == probes.end())
      probes.push_back(c.probe);
    plan.expected.push_back({c.key(), c.verdict});
  }
  for (const std::string& mutation : mutation_order) {
    RunRequest r = common;
    r.probes = probes_of[mutation];
    r.mutation = mutation;
    // --exchange is ep-step's: a run of other probes (another mutation's) goes without it.
    if (std::find(r.probes.begin(), r.probes.end(), "ep-step") == r.probes.end()) r.exchanges.clear();
    plan.run_descriptions.push_back(describe(r, labels));
    plan.runs.push_back(std::move(r));
  }
  plan.source = file;
  plan.source_kind = "report";
  plan.source_document = {{"tool", rep.tool},
                          {"invocation", rep.invocation},
                          {"environment", rep.environment},
                          {"options", rep.options}};
  return plan;
}

}  // namespace

ReproPlan make_repro_plan(const std::string& file, const std::filesystem::path& shape_dir,
                          const std::string& fixtures, int device, const std::string& engine) {
  const json j = read_json_file(file, "file");
  RunRequest base;
  base.fixtures = fixtures;
  base.engine = engine;
  base.device = device;
  base.quiet = true;
  const std::string schema =
      j.is_object() && j.contains("schema") && j.at("schema").is_string()
          ? j.at("schema").get<std::string>()
          : "";
  if (schema == report::kCaseSchemaName) return plan_from_case_file(file, shape_dir, base);
  if (schema == report::kSchemaName) return plan_from_report(file, shape_dir, base);
  throw UsageError("'" + file + "' is neither a moebench case file nor a report: field " +
                   "\"schema\" is " + (j.is_object() && j.contains("schema") ? j.at("schema").dump() : std::string("missing")) +
                   "; valid: \"" + report::kCaseSchemaName + "\", \"" + report::kSchemaName + "\"");
}

}  // namespace moe::cli
