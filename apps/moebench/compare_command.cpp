// `moebench compare BASE.json HEAD.json`: which cases got faster, slower or stayed the same,
// which verdicts changed, and whether the machines differ. Method: reports/COMPARE.md.
// Exit codes: 0 no regression; 1 a metric came out SLOWER, a verdict got worse or a base case is
// MISSING from the head (unless --allow-missing); 2 bad input, or no case in both reports.
#include <cstdio>
#include <memory>

#include "apps/moebench/commands.hpp"
#include "apps/moebench/text_output.hpp"
#include "common/errors.hpp"
#include "reports/case_filter.hpp"
#include "reports/compare.hpp"
#include "reports/comparison_table.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"

namespace moe::cli {

namespace {

struct CompareRequest {
  std::string base, head;
  std::vector<std::string> metrics{"gpu"};
  double threshold_pct = 2.0;
  double confidence = 0.99;
  std::size_t min_samples = 8;
  std::string format = "table";
  std::string output;
  std::string markdown_output, html_output;
  std::string filter;
  bool allow_missing = false;
};

std::string render(const report::Comparison& c, const std::string& format) {
  if (format == "markdown") return report::render_markdown(c);
  if (format == "html") return report::render_html(c);
  if (format == "json") return report::to_json(c).dump(1) + "\n";
  return report::render_comparison_table(c);
}

int compare(const CompareRequest& r) {
  require_format("--format", r.format, {"table", "markdown", "html", "json"});
  report::CompareOptions options;
  options.metrics = report::compared_metrics_from_strings(r.metrics);
  options.min_effect = r.threshold_pct / 100.0;
  options.confidence = r.confidence;
  options.min_samples_for_rank_test = r.min_samples;
  options.allow_missing = r.allow_missing;
  options.validate();  // before reading files: a bad option is named first

  report::Report base = report::load_report(r.base);
  report::Report head = report::load_report(r.head);
  report::keep_matching_cases(base, r.filter, r.base);
  report::keep_matching_cases(head, r.filter, r.head);
  const report::Comparison c = report::compare_reports(base, head, options, r.base, r.head);

  write_text_output(render(c, r.format), r.output);
  if (!r.markdown_output.empty()) write_text_output(report::render_markdown(c), r.markdown_output);
  if (!r.html_output.empty()) write_text_output(report::render_html(c), r.html_output);
  return c.regressed() ? to_int(ExitCode::check_failed) : to_int(ExitCode::ok);
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto r = std::make_shared<CompareRequest>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare two reports case by case: FASTER, SLOWER, SAME or AMBIGUOUS from the sample "
      "distributions; exits 1 on a regression or a worse verdict");
  cmd->add_option("base", r->base, "Base report (JSON), e.g. the main branch's")->required();
  cmd->add_option("head", r->head, "Head report (JSON), e.g. the pull request's")->required();
  add_metric_option(cmd, r->metrics, "Metrics to compare");
  cmd->add_option("--threshold", r->threshold_pct,
                  "Smallest relative change that counts, in percent of the base median")
      ->capture_default_str();
  cmd->add_option("--confidence", r->confidence,
                  "Confidence of the shift interval (0.5 to below 1)")
      ->capture_default_str();
  cmd->add_option("--min-samples", r->min_samples,
                  "Samples per side from which the rank test decides (below: disjoint ranges)")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--format", r->format, "Standard output: table, markdown, html or json")
      ->capture_default_str();
  cmd->add_option("-o,--output", r->output, "Write the --format output to FILE, not stdout");
  cmd->add_option("--markdown", r->markdown_output,
                  "Also write Markdown to FILE (e.g. $GITHUB_STEP_SUMMARY)");
  cmd->add_option("--html", r->html_output, "Also write the HTML page to FILE");
  cmd->add_option("--filter", r->filter,
                  "Compare only the cases whose key matches this regular expression "
                  "(ECMAScript, searched anywhere in the key, e.g. 'shape=qwen3.*/m=(1|2)/')");
  cmd->add_flag("--allow-missing", r->allow_missing,
                "A base case missing from the head is listed, not a failure (a head that ran "
                "a subset on purpose)");
  return {cmd, [r] { return compare(*r); }};
}

}  // namespace moe::cli
