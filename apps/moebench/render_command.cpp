// `moebench render REPORT.json`: a report for people (terminal table, Markdown, HTML page) or
// for Google Benchmark's tooling (gbench JSON).
#include <memory>

#include "apps/moebench/commands.hpp"
#include "apps/moebench/text_output.hpp"
#include "reports/case_filter.hpp"
#include "reports/gbench_export.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {

struct RenderRequest {
  std::string report;
  std::string format = "table";
  std::string output;
  std::string filter;
};

int render(const RenderRequest& r) {
  require_format("--format", r.format, {"table", "markdown", "html", "gbench", "json"});
  report::Report rep = report::load_report(r.report);
  report::keep_matching_cases(rep, r.filter, r.report);
  std::string text;
  if (r.format == "markdown")
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
                "plots, or Google Benchmark JSON");
  cmd->add_option("report", r->report, "Report file (JSON)")->required();
  cmd->add_option("--format", r->format,
                  "table, markdown, html, gbench (Google Benchmark JSON, for its compare.py) "
                  "or json (the report, re-serialised)")
      ->capture_default_str();
  cmd->add_option("-o,--output", r->output, "Write to FILE, not stdout");
  cmd->add_option("--filter", r->filter,
                  "Only the cases whose key matches this regular expression (ECMAScript, "
                  "searched anywhere in the key)");
  return {cmd, [r] { return render(*r); }};
}

}  // namespace moe::cli
