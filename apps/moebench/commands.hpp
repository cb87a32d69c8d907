#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "common/fixtures_location.hpp"

namespace moe::cli {

// Each command lives in its own file and registers itself: it adds its subcommand and options
// to `app` and returns the action to run when that subcommand was chosen. Actions return the
// process exit code and raise moe::Error for failures (mapped to exit codes in main).
using Action = std::function<int()>;
struct Command {
  CLI::App* app;
  Action action;
};

Command add_run_command(CLI::App& app, const std::vector<std::string>& argv);
Command add_list_command(CLI::App& app);
Command add_env_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_noise_command(CLI::App& app);
Command add_render_command(CLI::App& app);
Command add_repro_command(CLI::App& app, const std::vector<std::string>& argv);
Command add_selftest_command(CLI::App& app, const std::vector<std::string>& argv);

// For options bound to unsigned integers: CLI11 would wrap "-1" to 2^64 - 1. Refuses a sign and
// anything but digits, naming the value.
const CLI::Validator& whole_number();

// --engine of run, repro and selftest: a path, never empty (an empty one would silently mean
// moebench's own engine).
const CLI::Validator& adapter_path();

// --metric of compare and noise: comma-separated names of reports/compare.hpp's metrics.
CLI::Option* add_metric_option(CLI::App* cmd, std::vector<std::string>& metrics,
                               const std::string& purpose);

// A list option's values each once: "--m 1,2,2" runs no case twice, it is refused naming the
// value ("--m 2 is given twice").
void refuse_duplicates(const std::string& option, const std::vector<std::string>& values);

// Where shapes and cases live (common/fixtures_location.hpp): --fixtures (`flag`), else
// $MOEBENCH_FIXTURES, else the running binary's ../share/moebench/fixtures, else the source
// tree's fixtures/ when the binary is in its build tree, else none (the built-in shapes).
FixturesLocation find_fixtures(const std::string& flag);

// The adapter a case file names (field run.engine) for this binary (common/adapter_location.hpp:
// relative to the case file, else installed beside the binary, else in its build tree); raises
// UsageError beginning with `origin` when it is not found.
std::string find_case_adapter(const std::string& name, const std::string& case_file, const std::string& origin);
// --fixtures' help, the same for every command that takes it: the lookup order.
extern const char* const kFixturesHelp;
// --assume-routing's help, the same for `run` and `list`.
extern const char* const kAssumeRoutingHelp;

}  // namespace moe::cli
