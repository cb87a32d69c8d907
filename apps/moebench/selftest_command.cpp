#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"

namespace moe::cli {

// Placeholder until the selftest command lands.
Command add_selftest_command(CLI::App& app, const std::vector<std::string>&) {
  CLI::App* cmd = app.add_subcommand("selftest", "(not yet available)");
  return {cmd, [] { throw UsageError("'selftest' is not implemented yet"); return 0; }};
}

}  // namespace moe::cli
