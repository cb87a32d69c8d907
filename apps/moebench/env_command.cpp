#include <cstdio>

#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"
#include "engine/engine_options.hpp"
#include "kernels/peer/cublas_library.hpp"
#include "reports/environment.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {
// Flattens nested objects to dotted keys for the table view.
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::vector<std::string>>& rows) {
  for (const auto& [k, v] : j.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object())
      flatten(v, key, rows);
    else
      rows.push_back({key, v.is_string() ? v.get<std::string>() : v.dump()});
  }
}

int show_env(int device, const std::string& format) {
  if (format != "table" && format != "json")
    throw UsageError("--format '" + format + "' is not valid for env; valid: table, json");
  if (device < 0) throw UsageError("--device " + std::to_string(device) + " must be >= 0");
  // The engine switches as a run would take them from this environment (a report keeps them
  // in options.engine).
  const EngineOptions engine = EngineOptions::from_environment();
  nlohmann::json j{{"tool", report::tool_info()},
                   {"engine_options", engine.to_json()},
                   {"environment", report::capture_environment(device)}};
  // Whether probe bandwidth's vendor peer (--peer cublas) can run here.
  if (const auto cublas = kernels::peer::find_cublas(); cublas.library)
    j["peer"] = {{"cublas", cublas.library->soname()}, {"cublas_version", cublas.library->version()}};
  else
    j["peer"] = {{"cublas", nullptr}, {"cublas_reason", cublas.missing_message()}};
  if (format == "json") {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::vector<std::vector<std::string>> rows{{"field", "value"}};
    flatten(j, "", rows);
    std::printf("%s", report::format_columns(rows).c_str());
  }
  return 0;
}
}  // namespace

Command add_env_command(CLI::App& app) {
  auto device = std::make_shared<int>(0);
  auto format = std::make_shared<std::string>("table");
  CLI::App* cmd = app.add_subcommand("env", "Show the environment block of a report and the engine switches in force");
  cmd->add_option("--device", *device, "CUDA device index")->capture_default_str();
  cmd->add_option("--format", *format, "table or json")->capture_default_str();
  return {cmd, [device, format] { return show_env(*device, *format); }};
}

}  // namespace moe::cli
