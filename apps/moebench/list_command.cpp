#include <cstdio>

#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"
#include "engine/ep/exchange_names.hpp"
#include "engine/engine_options.hpp"
#include "engine/fault_injection.hpp"
#include "engine/shape_library.hpp"
#include "probes/probe.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::cli {

namespace {

// `list shapes --shape FILE|NAME`: one shape as parsed, every field, where each came from, what
// the engine does not compute yet and the fingerprint its cases are keyed by.
void print_parsed_shape(const Shape& s) {
  std::vector<std::vector<std::string>> rows{{"field", "value", "from"}};
  const nlohmann::json j = s.to_json();
  for (const auto& [field, value] : j.items()) {
    if (field == "name" || field == "description" || field == "not_computed") continue;
    rows.push_back({field, value.is_string() ? value.get<std::string>() : value.dump(),
                    s.source_keys.contains(field) ? s.source_keys.at(field) : ""});
  }
  rows.push_back({"fingerprint", s.fingerprint(), ""});
  std::printf("shape %s (%s)\n%s", report::escape_terminal(s.name).c_str(),
              report::escape_terminal(s.source.empty() ? "library" : s.source).c_str(),
              report::format_columns(rows, report::kMaxLineChars).c_str());
  if (s.routing_assumed)
    std::printf("routing ASSUMED as %s (--assume-routing): the config's model_type is not in the "
                "routing table\n", report::escape_terminal(s.routing_family).c_str());
  else if (!s.routing_family.empty())
    std::printf("routing of model_type %s (routing table)\n",
                report::escape_terminal(s.routing_family).c_str());
  const std::vector<std::string> missing = s.not_computed();
  if (missing.empty()) {
    std::printf("runs as parsed\n");
    // How the kernels compute what the config names otherwise (docs/configs.md).
    const kernels::MoeDims d = s.dims(kernels::WeightFormat::bf16);
    if (d.shared != s.shared_experts)
      std::printf("computed as %d shared experts of width %d (%s = %d)\n", d.shared, d.inter,
                  report::escape_terminal(s.key_of("shared_expert_inter")).c_str(), s.shared_expert_inter);
    if (d.scale_input) std::printf("runs on the tensor-core path at every M (the input scaled by the router weight)\n");
  }
  for (const std::string& m : missing)
    std::printf("not computed yet (moebench run refuses it): %s\n",
                report::escape_terminal(m, report::kMaxLineChars).c_str());
}

int list(const std::string& what, const std::string& fixtures,
         const std::vector<std::string>& shape_specs, const std::string& assume_routing) {
  const bool all = what.empty();
  if (!shape_specs.empty()) {
    if (what != "shapes") throw UsageError("--shape goes with 'list shapes'");
    const auto library = shape_library(find_fixtures(fixtures).dir);
    std::vector<Shape> shapes;
    for (const std::string& spec : shape_specs)
      shapes.push_back(resolve_shape(spec, library, assume_routing));
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      if (i) std::printf("\n");
      print_parsed_shape(shapes[i]);
    }
    return 0;
  }
  if (!all && what != "probes" && what != "shapes" && what != "mutations" && what != "switches")
    throw UsageError("cannot list '" + what + "'; valid: probes, shapes, mutations, switches");
  // Read the shapes first: a bad --fixtures is one line of error, not a table and then one.
  std::vector<Shape> shapes;
  std::string shapes_from;
  if (all || what == "shapes") {
    const FixturesLocation location = find_fixtures(fixtures);
    shapes = shape_library(location.dir);
    shapes_from = location.describe();
  }
  if (all || what == "probes") {
    std::vector<std::vector<std::string>> rows{{"probe", "default", "description"}};
    for (const ProbeInfo& p : all_probes())
      rows.push_back({std::string(p.name), p.in_default_suite ? "yes" : "no",
                      std::string(p.description)});
    std::printf("%s", report::format_columns(rows, report::kMaxLineChars).c_str());
    for (const ProbeInfo& p : all_probes())
      if (!p.not_built.empty())
        std::printf("%.*s: not built, cannot run: %.*s\n", static_cast<int>(p.name.size()),
                    p.name.data(), static_cast<int>(p.not_built.size()), p.not_built.data());
    std::printf("%s\n", ep::describe_exchange_axis().c_str());
    // Each probe's declared sweep (probes/sweep.hpp): what run, --dry-run and --filter count.
    std::printf("\nsweeps (defaults; --shape, --m, --weight-format and --mode replace them on the "
                "axes a probe has; - : no such axis):\n");
    std::vector<std::vector<std::string>> sweeps{{"probe", "cases", "shapes", "M", "formats", "mode"}};
    for (const ProbeInfo& p : all_probes()) {
      if (!p.sweep) {
        sweeps.push_back({std::string(p.name), "decided as it runs", "", "", "", ""});
        continue;
      }
      const SweepDefaults d = describe_defaults(*p.sweep);
      sweeps.push_back({std::string(p.name), d.cases, d.shapes, d.ms, d.formats, d.modes});
    }
    std::printf("%s", report::format_columns(sweeps, report::kMaxLineChars).c_str());
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
    std::printf("shapes from: %s\n", report::escape_terminal(shapes_from, report::kMaxLineChars).c_str());
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
  auto shapes = std::make_shared<std::vector<std::string>>();
  auto assume_routing = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "List probes, shapes, mutations or engine switches, one line each");
  cmd->add_option("what", *what, "probes, shapes, mutations or switches (default: all four)");
  cmd->add_option("--fixtures", *fixtures, kFixturesHelp);
  cmd->add_option("--shape", *shapes,
                  "With 'list shapes': show these shapes as parsed (names, shape files or a "
                  "model's config.json; comma-separated), every field and where it came from")
      ->delimiter(',');
  cmd->add_option("--assume-routing", *assume_routing, kAssumeRoutingHelp);
  return {cmd, [what, fixtures, shapes, assume_routing] {
            return list(*what, *fixtures, *shapes, *assume_routing);
          }};
}

}  // namespace moe::cli
