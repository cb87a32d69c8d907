#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"

namespace moe::cli {

// Placeholder until the repro command lands.
Command add_repro_command(CLI::App& app, const std::vector<std::string>&) {
  CLI::App* cmd = app.add_subcommand("repro", "(not yet available)");
  return {cmd, [] { throw UsageError("'repro' is not implemented yet"); return 0; }};
}

}  // namespace moe::cli
