#include "apps/moebench/commands.hpp"
#include "common/errors.hpp"

namespace moe::cli {

// Placeholder until the render command lands.
Command add_render_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("render", "(not yet available)");
  return {cmd, [] { throw UsageError("'render' is not implemented yet"); return 0; }};
}

}  // namespace moe::cli
