// moebench: probes of a Mixture-of-Experts engine on NVIDIA GPUs. See README.md.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "apps/moebench/commands.hpp"
#include "common/build_info.hpp"
#include "common/errors.hpp"

namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 all checks passed; 1 a check failed (a bug reproduced, a regression);\n"
    "2 usage or input error (nothing ran); 3 environment (no GPU or driver, not enough memory);\n"
    "4 a probe errored.";

void add_run_options(CLI::App& run, moe::cli::RunRequest& r) {
  run.add_option("probes", r.probes, "Probes to run (default: the default suite; see `list`)");
  run.add_option("--shape", r.shapes,
                 "Shape names or paths to a shape file / a model's config.json (comma-separated)")
      ->delimiter(',');
  run.add_option("--m", r.ms, "Tokens per forward, comma-separated (default: per probe)")
      ->delimiter(',');
  run.add_option("--weight-format", r.weight_formats, "bf16, int4 (default: both)")
      ->delimiter(',');
  run.add_option("--mode", r.modes, "eager, graph (default: both)")->delimiter(',');
  run.add_option("--l2", r.l2, "cold: flush L2 before each sample; hot: don't")
      ->capture_default_str();
  run.add_option("--min-samples", r.min_samples, "Stop rule: at least this many samples")
      ->capture_default_str();
  run.add_option("--max-noise", r.max_noise_pct,
                 "Stop rule: relative std. dev. of GPU time at most this, in percent")
      ->capture_default_str();
  run.add_option("--min-time", r.min_time_s, "Stop rule: at least this much GPU time, seconds")
      ->capture_default_str();
  run.add_option("--timeout", r.timeout_s, "Stop rule: at most this much wall time, seconds")
      ->capture_default_str();
  run.add_option("--max-samples", r.max_samples, "Stop rule: at most this many samples")
      ->capture_default_str();
  run.add_option("--warmup", r.warmup, "Untimed runs before sampling")->capture_default_str();
  run.add_flag("--no-kernel-timing", r.no_kernel_timing,
               "Skip CUPTI kernel timing (kernel time and count)");
  run.add_option("--device", r.device, "CUDA device index")->capture_default_str();
  run.add_option("--seed", r.seed, "Seed of weights, inputs and routing")->capture_default_str();
  run.add_option("-o,--output", r.output, "Report file (JSON), rewritten after every case")
      ->capture_default_str();
  run.add_option("--format", r.format, "Standard output: table or json")->capture_default_str();
  run.add_option("--mutation", r.mutation,
                 "Inject a fault for the whole run (see `list mutations`)");
  run.add_option("--copy-bytes", r.copy_bytes,
                 "Buffer size of probe copy (default 4 GiB, capped by free memory)");
  run.add_option("--fixtures", r.fixtures, "Folder with shapes/ and cases/");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"moebench: measure and probe a Mixture-of-Experts engine on NVIDIA GPUs"};
  app.footer(kExitCodes);
  app.set_version_flag("--version", moe::build_info().version + " (" +
                                        moe::build_info().git_commit.substr(0, 12) +
                                        (moe::build_info().git_dirty ? ", dirty)" : ")"));
  app.require_subcommand(1);

  moe::cli::RunRequest run_request;
  for (int i = 0; i < argc; ++i) run_request.argv.emplace_back(argv[i]);
  CLI::App* run = app.add_subcommand("run", "Run probes and write a JSON report");
  add_run_options(*run, run_request);

  std::string list_what, list_fixtures;
  CLI::App* list = app.add_subcommand("list", "List probes, shapes or mutations");
  list->add_option("what", list_what, "probes, shapes or mutations (default: all)");
  list->add_option("--fixtures", list_fixtures, "Folder with shapes/ and cases/");

  int env_device = 0;
  std::string env_format = "table";
  CLI::App* env = app.add_subcommand("env", "Show the environment block of a report");
  env->add_option("--device", env_device, "CUDA device index")->capture_default_str();
  env->add_option("--format", env_format, "table or json")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "moebench: %s\nRun 'moebench --help' for usage.\n", e.what());
    return moe::to_int(moe::ExitCode::usage);
  }

  try {
    if (*run) return moe::cli::run_command(run_request);
    if (*list) return moe::cli::list_command(list_what, list_fixtures);
    if (*env) return moe::cli::env_command(env_device, env_format);
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moebench: %s\n", e.what());
    return moe::to_int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: internal error: %s\n", e.what());
    return moe::to_int(moe::ExitCode::probe_error);
  }
  return moe::to_int(moe::ExitCode::usage);
}
