// `moebench noise RUN1.json RUN2.json [...]`: run-to-run noise of separate runs of the same
// cases: each run's median per case and how far those medians spread (reports/noise.hpp).
// scripts/noise.sh makes the runs. Exit codes: 0 computed (NOISY cases included, unless
// --fail-noisy); 1 with --fail-noisy when a case is NOISY (a CI gate); 2 bad input.
#include <memory>

#include "apps/moebench/commands.hpp"
#include "apps/moebench/text_output.hpp"
#include "common/errors.hpp"
#include "reports/case_filter.hpp"
#include "reports/noise.hpp"

namespace moe::cli {

namespace {

struct NoiseRequest {
  std::vector<std::string> reports;
  std::vector<std::string> metrics{"gpu"};
  double threshold_pct = 1.0;
  std::string format = "table";
  std::string output;
  bool fail_noisy = false;
  std::string filter;
};

int noise(const NoiseRequest& r) {
  require_format("--format", r.format, {"table", "json"});
  report::NoiseOptions options;
  options.metrics = report::compared_metrics_from_strings(r.metrics);
  options.max_spread = r.threshold_pct / 100.0;
  options.validate();  // before reading files: a bad option is named first
  if (r.reports.size() < 2)
    throw UsageError("noise needs at least two reports (separate runs of the same cases), got " +
                     std::to_string(r.reports.size()));

  std::vector<report::Report> reports;
  for (const std::string& path : r.reports) {
    reports.push_back(report::load_report(path));
    report::keep_matching_cases(reports.back(), r.filter, path);
  }
  const report::NoiseSummary s = report::run_to_run_noise(reports, r.reports, options);
  write_text_output(r.format == "json" ? report::to_json(s).dump(1) + "\n"
                                       : report::render_noise_table(s),
                    r.output);
  return r.fail_noisy && s.noisy() > 0 ? to_int(ExitCode::check_failed) : to_int(ExitCode::ok);
}

}  // namespace

Command add_noise_command(CLI::App& app) {
  auto r = std::make_shared<NoiseRequest>();
  CLI::App* cmd = app.add_subcommand(
      "noise",
      "Run-to-run noise: the median of each case in each of 2+ reports of separate runs, and "
      "the spread of those medians ((max - min) / mean and std / mean); see scripts/noise.sh");
  cmd->add_option("reports", r->reports, "Reports (JSON) of separate runs of the same cases")
      ->required();
  add_metric_option(cmd, r->metrics, "Metrics");
  cmd->add_option("--threshold", r->threshold_pct,
                  "Spread of the medians above this, in percent of their mean, is NOISY")
      ->capture_default_str();
  cmd->add_option("--format", r->format, "Standard output: table or json")
      ->capture_default_str();
  cmd->add_option("-o,--output", r->output, "Write the --format output to FILE, not stdout");
  cmd->add_option("--filter", r->filter,
                  "Only the cases whose key matches this regular expression (ECMAScript, "
                  "searched anywhere in the key)");
  cmd->add_flag("--fail-noisy", r->fail_noisy,
                "Exit 1 when a case's spread is above --threshold (default: report it, exit 0)");
  return {cmd, [r] { return noise(*r); }};
}

}  // namespace moe::cli
