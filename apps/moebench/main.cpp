// moebench: probes of a Mixture-of-Experts engine on NVIDIA GPUs. See README.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <regex>
#include <span>

#include "apps/moebench/commands.hpp"
#include "common/build_info.hpp"
#include "common/errors.hpp"

namespace {
constexpr const char* kExitCodes =
    "Exit codes: 0 all checks passed; 1 a check failed (a bug reproduced, a regression);\n"
    "2 usage or input error (nothing ran); 3 environment (no GPU or driver, not enough memory);\n"
    "4 a probe errored; 129, 130, 143 stopped by SIGHUP, SIGINT, SIGTERM (the partial report\n"
    "was written, saying where the run stopped).";
// CLI11's parse errors as one line that names the value and what the option takes.
std::string describe_parse_error(const CLI::App& app, std::span<const moe::cli::Command> commands,
                                 const CLI::ParseError& e) {
  const std::string what = e.what();
  if (what == "A subcommand is required") {
    std::string valid;
    for (const auto& c : commands) valid += (valid.empty() ? "" : ", ") + c.app->get_name();
    return "a command is required; valid: " + valid;
  }
  // "Could not convert: --m = abc": name the option's own description of what it takes.
  static const std::regex conversion(R"(Could not convert: (\S+) = (.*))");
  std::smatch m;
  if (std::regex_match(what, m, conversion)) {
    for (const auto& c : commands)
      if (c.app->parsed())
        if (const CLI::Option* opt = c.app->get_option_no_throw(m[1].str()))
          return m[1].str() + " '" + m[2].str() + "' is not valid: " + opt->get_description();
    return m[1].str() + " '" + m[2].str() + "' is not a valid value";
  }
  return what + " (see 'moebench " + (app.get_subcommands().empty() ? std::string() : app.get_subcommands().front()->get_name() + " ") + "--help')";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moe::cli;
  CLI::App app{"moebench: measure and probe a Mixture-of-Experts engine on NVIDIA GPUs"};
  app.footer(kExitCodes);
  const moe::BuildInfo& b = moe::build_info();
  app.set_version_flag("--version", "moebench " + b.version + " (" + b.git_commit.substr(0, 12) +
                                        (b.git_dirty ? ", dirty)" : ")"));
  app.require_subcommand(1);

  const std::vector<std::string> args(argv, argv + argc);
  const Command commands[] = {
      add_run_command(app, args),     add_list_command(app),
      add_env_command(app),           add_compare_command(app),
      add_noise_command(app),         add_render_command(app),
      add_repro_command(app, args),   add_selftest_command(app, args),
  };

  // CLI11 would call an unknown first word "a missing subcommand"; name it and the valid ones.
  if (argc > 1 && argv[1][0] != '-') {
    std::string valid;
    bool known = false;
    for (const Command& c : commands) {
      known = known || c.app->get_name() == argv[1];
      valid += (valid.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "moebench: unknown command '%s'; valid: %s\n", argv[1], valid.c_str());
      return moe::to_int(moe::ExitCode::usage);
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "moebench: %s\n", describe_parse_error(app, commands, e).c_str());
    return moe::to_int(moe::ExitCode::usage);
  }

  try {
    for (const Command& c : commands)
      if (c.app->parsed()) return c.action();
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moebench: %s\n", e.what());
    return moe::to_int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: internal error: %s\n", e.what());
    return moe::to_int(moe::ExitCode::probe_error);
  }
  return moe::to_int(moe::ExitCode::usage);
}
