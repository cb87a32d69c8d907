#include <cstdio>

#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"
#include "engine/engine_options.hpp"
#include "engine/fault_injection.hpp"
#include "probes/probe.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {
int list(const std::string& what, const std::string& fixtures) {
  const bool all = what.empty();
  if (!all && what != "probes" && what != "shapes" && what != "mutations" && what != "switches")
    throw UsageError("cannot list '" + what + "'; valid: probes, shapes, mutations, switches");
  // Read the shapes first: a bad --fixtures is one line of error, not a table and then one.
  std::vector<Shape> shapes;
  if (all || what == "shapes")
    shapes = load_shape_library(std::filesystem::path(fixtures_dir(fixtures)) / "shapes");
  if (all || what == "probes") {
    std::vector<std::vector<std::string>> rows{{"probe", "default", "description"}};
    for (const ProbeInfo& p : all_probes())
      rows.push_back({std::string(p.name), p.in_default_suite ? "yes" : "no",
                      std::string(p.description)});
    std::printf("%s", report::format_columns(rows, report::kMaxLineChars).c_str());
  }
  if (all || what == "shapes") {
    if (all) std::printf("\n");
    std::vector<std::vector<std::string>> rows{
        {"shape", "hidden", "moe_inter", "experts", "top_k", "shared", "scoring", "description"}};
    for (const Shape& s : shapes)
      rows.push_back({s.name, std::to_string(s.hidden), std::to_string(s.moe_inter),
                      std::to_string(s.experts), std::to_string(s.top_k),
                      std::to_string(s.shared_experts), std::string(kernels::to_string(s.scoring)),
                      s.description});
    std::printf("%s", report::format_columns(rows, report::kMaxLineChars).c_str());
  }
  if (all || what == "mutations") {
    if (all) std::printf("\n");
    std::vector<std::vector<std::string>> rows{{"mutation", "caught by", "restores"}};
    for (const MutationInfo& m : all_mutations())
      rows.push_back({std::string(m.name), std::string(m.probe), std::string(m.description)});
    std::printf("%s", report::format_columns(rows, report::kMaxLineChars).c_str());
  }
  if (all || what == "switches") {
    if (all) std::printf("\n");
    std::vector<std::vector<std::string>> rows{
        {"switch", "default", "values", "environment", "meaning"}};
    for (const EngineSwitch& s : engine_switches()) {
      std::string values;
      for (std::string_view v : s.values) values += (values.empty() ? "" : "|") + std::string(v);
      rows.push_back({std::string(s.name), std::string(s.default_value), values, std::string(s.env),
                      std::string(s.meaning)});
    }
    std::printf("%s", report::format_columns(rows, report::kMaxLineChars).c_str());
  }
  return 0;
}
}  // namespace

Command add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  auto fixtures = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "List probes, shapes, mutations or engine switches, one line each");
  cmd->add_option("what", *what, "probes, shapes, mutations or switches (default: all four)");
  cmd->add_option("--fixtures", *fixtures, "Folder with shapes/ and cases/");
  return {cmd, [what, fixtures] { return list(*what, *fixtures); }};
}

}  // namespace moe::cli
