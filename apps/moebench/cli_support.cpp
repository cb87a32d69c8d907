// Small pieces every command shares: option checks and where the fixtures are.
#include <cstdlib>
#include <filesystem>

#include "apps/moebench/commands.hpp"
#include "common/adapter_location.hpp"
#include "common/errors.hpp"

namespace moe::cli {

const CLI::Validator& whole_number() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::string() : "'" + s + "' is not valid: a whole number >= 0";
      },
      "UINT");
  return v;
}

const CLI::Validator& adapter_path() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        return s.empty() ? "'' is not valid: the path of an engine adapter's shared library" : std::string();
      },
      "PATH");
  return v;
}

CLI::Option* add_metric_option(CLI::App* cmd, std::vector<std::string>& metrics,
                               const std::string& purpose) {
  return cmd
      ->add_option("--metric", metrics,
                   purpose + ", comma-separated: gpu (GPU-event time), host (host enqueue "
                             "time), gbps (GB/s), pct (percent of each run's read ceiling: "
                             "for reports from different GPUs)")
      ->delimiter(',')
      ->capture_default_str();
}

void refuse_duplicates(const std::string& option, const std::vector<std::string>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (values[i] == values[j])
        throw UsageError(option + " '" + values[i] + "' is given twice: each value once");
}

const char* const kAssumeRoutingHelp =
    "For a config.json whose model_type is not in the routing table: read its routing as this "
    "known model_type's (e.g. --assume-routing qwen2_moe: softmax, norm_topk_prob, a "
    "sigmoid-gated shared expert). The shape and the report record the assumption. Known: see "
    "docs/configs.md";

const char* const kFixturesHelp =
    "Folder with shapes/ and cases/. Looked for in this order: this option, then "
    "MOEBENCH_FIXTURES, then ../share/moebench/fixtures beside the binary (an installed "
    "moebench), then the source tree's fixtures/ (a binary in its build tree); with none, the "
    "shapes built into the binary";

std::string find_case_adapter(const std::string& name, const std::string& case_file, const std::string& origin) {
  AdapterSearch search;
  std::error_code ec;
  search.executable = std::filesystem::read_symlink("/proc/self/exe", ec);
  search.build_dir = MOEBENCH_BUILD_DIR;
  search.case_file = std::filesystem::absolute(case_file, ec);
  return locate_case_adapter(name, search, origin).string();
}

FixturesLocation find_fixtures(const std::string& flag) {
  FixturesSearch search;
  search.flag = flag;
  if (const char* env = std::getenv("MOEBENCH_FIXTURES")) search.environment = env;
  std::error_code ec;
  search.executable = std::filesystem::read_symlink("/proc/self/exe", ec);
  search.build_dir = MOEBENCH_BUILD_DIR;
  search.source_fixtures = MOEBENCH_SOURCE_FIXTURES_DIR;
  return locate_fixtures(search);
}

}  // namespace moe::cli
