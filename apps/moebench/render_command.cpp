// `moebench render REPORT.json`: a report for people (terminal table, Markdown, HTML page) or
// for Google Benchmark's tooling (gbench JSON).
#include <memory>
#include <optional>

#include "apps/moebench/commands.hpp"
#include "apps/moebench/text_output.hpp"
#include "common/errors.hpp"
#include "reports/case_filter.hpp"
#include "reports/gbench_export.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/pivot_table.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {

struct RenderRequest {
  std::string report;
  std::string format = "table";
  std::string output;
  std::string pivot;  // a metric laid out as shape x M grids (Markdown only)
  std::string probe;  // with --pivot: only this probe's cases
  std::string mode;   // with --pivot: only the cases of this mode
  std::string filter;
};

int render(const RenderRequest& r) {
  require_format("--format", r.format, {"table", "markdown", "html", "gbench", "json"});
  if (!r.pivot.empty() && r.format != "markdown")
    throw UsageError("--pivot " + r.pivot + ": only with --format markdown (given: " + r.format +
                     ")");
  if (!r.mode.empty() && r.pivot.empty())
    throw UsageError("--mode " + r.mode + ": only with --pivot");
  if (!r.probe.empty() && r.pivot.empty())
    throw UsageError("--probe " + r.probe + ": only with --pivot");
  report::Report rep = report::load_report(r.report);
  report::keep_matching_cases(rep, r.filter, r.report);
  std::string text;
  if (!r.pivot.empty())
    text = report::render_markdown_pivot(
        rep, r.pivot,
        {r.probe.empty() ? std::nullopt : std::optional<std::string>(r.probe),
         r.mode.empty() ? std::nullopt : std::optional<std::string>(r.mode)});
  else if (r.format == "markdown")
    text = report::render_markdown(rep);
  else if (r.format == "html")
    text = report::render_html(rep);
  else if (r.format == "gbench")
    text = report::to_gbench_json(rep).dump(2) + "\n";
  else if (r.format == "json")
    text = nlohmann::json(rep).dump(1) + "\n";
  else
    text = report::render_table(rep);
  write_text_output(text, r.output);
  return 0;
}

}  // namespace

Command add_render_command(CLI::App& app) {
  auto r = std::make_shared<RenderRequest>();
  CLI::App* cmd = app.add_subcommand(
      "render", "Render a report: terminal table, Markdown, a self-contained HTML page with "
                "plots (GB/s and time per layer against M, stages, host time saved by replay), "
                "or Google Benchmark JSON");
  cmd->add_option("report", r->report, "Report file (JSON)")->required();
  cmd->add_option("--format", r->format,
                  "table, markdown, html, gbench (Google Benchmark JSON, for its compare.py) "
                  "or json (the report, re-serialised)")
      ->capture_default_str();
  cmd->add_option("-o,--output", r->output, "Write to FILE, not stdout");
  cmd->add_option("--pivot", r->pivot,
                  "Markdown: one metric (a case metric such as pct_of_read_ceiling, or gpu for "
                  "the median GPU time) as a table per probe, a row per case, shape, format "
                  "and mode, a column per M");
  cmd->add_option("--probe", r->probe, "With --pivot: only this probe's cases");
  cmd->add_option("--mode", r->mode, "With --pivot: only the cases of this mode (eager, graph)");
  cmd->add_option("--filter", r->filter,
                  "Only the cases whose key matches this regular expression (ECMAScript, "
                  "searched anywhere in the key)");
  return {cmd, [r] { return render(*r); }};
}

}  // namespace moe::cli
