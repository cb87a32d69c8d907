#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"

namespace moe::cli {

// Placeholder until the compare command lands.
Command add_compare_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("compare", "(not yet available)");
  return {cmd, [] { throw UsageError("'compare' is not implemented yet"); return 0; }};
}

}  // namespace moe::cli
