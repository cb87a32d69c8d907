#include "reports/markdown.hpp"

#include <cmath>
#include <sstream>

#include "reports/case_summary.hpp"
#include "reports/metadata.hpp"
#include "reports/rank_figures.hpp"
#include "reports/stage_view.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"
#include "reports/routing_histogram.hpp"

namespace moe::report {

namespace {

std::string verdict_badge(Verdict v) {
  switch (v) {
    case Verdict::pass: return "✅ PASS";
    case Verdict::fail: return "❌ FAIL";
    case Verdict::inconclusive: return "⚠️ INCONCLUSIVE";
    case Verdict::error: return "💥 ERROR";
  }
  return to_string(v);
}

std::string change_badge(Change c) {
  switch (c) {
    case Change::slower: return "🔴 SLOWER";
    case Change::faster: return "🟢 FASTER";
    case Change::same: return "SAME";
    case Change::ambiguous: return "🟡 AMBIGUOUS";
  }
  return to_string(c);
}

std::string opt(const std::optional<double>& v) { return v ? fmt(*v) : "–"; }

std::string code(const std::string& s) { return "`" + escape_markdown_cell(s) + "`"; }

void table_row(std::ostringstream& out, const std::vector<std::string>& cells) {
  out << '|';
  for (const std::string& c : cells) out << ' ' << c << " |";
  out << '\n';
}

void table_header(std::ostringstream& out, const std::vector<std::string>& cells,
                  const std::vector<bool>& numeric) {
  table_row(out, cells);
  out << '|';
  for (std::size_t i = 0; i < cells.size(); ++i)
    out << (i < numeric.size() && numeric[i] ? " ---: |" : " --- |");
  out << '\n';
}

std::string metric_label(const MetricComparison& m) {
  std::string s = display_name(m.metric);
  if (m.measurement != "main") s += " [" + escape_markdown_cell(m.measurement) + "]";
  return s;
}

}  // namespace

std::string render_markdown(const Report& r) {
  std::ostringstream out;
  out << "## moebench report: " << verdict_badge(r.overall()) << "\n\n";
  out << escape_markdown_cell(describe_tool(r)) << " on " << escape_markdown_cell(describe_gpu(r));
  if (const std::string started = metadata_string(r.invocation, "/started_at"); !started.empty())
    out << ", " << started;
  out << "\n\n";
  if (!metadata_flag(r.invocation, "/complete", true))
    out << "> [!WARNING]\n> The run did not finish: this report holds the cases measured before "
           "it stopped.\n\n";
  if (auto rc = read_ceiling_gbps(r)) out << "Read ceiling: **" << fmt(*rc) << " GB/s**\n\n";

  table_header(out, {"probe", "case", "shape", "M", "format", "mode", "verdict", "GPU µs",
                     "host µs", "GB/s", "% read", "n", "noise %"},
               {false, false, false, true, false, false, false, true, true, true, true, true,
                true});
  for (const CaseResult& c : r.cases) {
    const CaseSummary s = summarize_case(c);
    table_row(out, {escape_markdown_cell(c.probe), escape_markdown_cell(c.name),
                    escape_markdown_cell(c.shape.value_or("–")),
                    c.m ? std::to_string(*c.m) : "–", escape_markdown_cell(c.format.value_or("–")),
                    escape_markdown_cell(c.mode.value_or("–")), verdict_badge(c.verdict),
                    s.gpu_time_us ? fmt(s.gpu_time_us->median) : "–", opt(s.host_time_us),
                    opt(s.gbps), opt(s.pct_of_read_ceiling),
                    s.gpu_time_us ? std::to_string(s.gpu_time_us->count) : "–",
                    s.gpu_time_us ? fmt(100 * s.gpu_time_us->rsd, 2) : "–"});
  }
  if (const std::vector<StageRow> stages = stage_rows(r); !stages.empty()) {
    out << "\n### Stages (µs per layer: own / critical path, floor)\n\n";
    std::vector<std::string> cells{"case"};
    std::vector<bool> numeric{false};
    for (const StageCell& s : stages.front().stages) {
      cells.push_back(s.stage);
      numeric.push_back(true);
    }
    cells.insert(cells.end(), {"critical path", "GPU", "floor"});
    numeric.insert(numeric.end(), {true, true, true});
    table_header(out, cells, numeric);
    for (const StageRow& row : stages) {
      std::vector<std::string> line{escape_markdown_cell(row.label)};
      for (const StageCell& s : row.stages)
        line.push_back(std::isnan(s.own_us) ? "–"
                                            : fmt(s.own_us) + " / " + fmt(s.critical_us) + " (" +
                                                  fmt(s.floor_us) + ")");
      line.insert(line.end(), {fmt(row.critical_path_us), fmt(row.gpu_us), fmt(row.floor_us)});
      table_row(out, line);
    }
  }
  out << render_rank_markdown(rank_figures(r));
  bool header = false;
  for (const CaseResult& c : r.cases) {
    if (c.verdict == Verdict::pass) continue;
    if (!header) out << "\n### Cases that did not pass\n\n";
    header = true;
    out << "- " << verdict_badge(c.verdict) << ' ' << code(c.key()) << ": "
        << escape_markdown_cell(c.reason) << '\n';
    for (const Check& k : c.checks)
      if (!k.passed)
        out << "  - check " << code(k.name) << ": " << escape_markdown_cell(k.detail) << '\n';
  }
  if (const std::string h = render_histogram_table(r); !h.empty())
    out << "\n<details><summary>Routing histograms</summary>\n\n```\n" << h << "```\n\n</details>\n";
  out << "\n<details><summary>Environment</summary>\n\n```json\n"
      << nlohmann::json{{"tool", r.tool}, {"environment", r.environment}, {"options", r.options}}
             .dump(2)
      << "\n```\n\n</details>\n";
  return out.str();
}

std::string render_markdown(const Comparison& c) {
  std::ostringstream out;
  std::size_t worse = 0;
  for (const VerdictChange& v : c.verdict_changes) worse += v.worse();
  out << "## moebench compare: "
      << (c.regressed() ? "🔴 regression" : "🟢 no regression") << "\n\n";
  out << "Base " << code(c.base_label) << " (" << escape_markdown_cell(describe_tool(*c.base))
      << ") → head " << code(c.head_label) << " ("
      << escape_markdown_cell(describe_tool(*c.head)) << ")\n\n";
  out << "**" << c.count(Change::slower) << "** slower, **" << c.count(Change::faster)
      << "** faster, " << c.count(Change::same) << " same, " << c.count(Change::ambiguous)
      << " ambiguous; **" << worse << "** verdict(s) worse. Threshold "
      << fmt(100 * c.options.min_effect, 2) << "%, confidence "
      << fmt(100 * c.options.confidence, 3) << "%.\n\n";

  std::vector<const EnvironmentDifference*> unexpected;
  for (const EnvironmentDifference& d : c.environment)
    if (!d.expected) unexpected.push_back(&d);
  if (!unexpected.empty() || !c.warnings.empty()) {
    out << "> [!WARNING]\n";
    if (!unexpected.empty()) out << "> The reports differ in what they ran on:\n";
    for (const EnvironmentDifference* d : unexpected)
      out << "> - " << escape_markdown_cell(d->field) << ": " << code(d->base) << " → "
          << code(d->head) << "\n";
    for (const std::string& w : c.warnings) out << "> - " << escape_markdown_cell(w) << "\n";
    out << "\n";
  }

  if (!c.verdict_changes.empty()) {
    out << "### Verdict changes\n\n";
    table_header(out, {"case", "base", "head", "reason (head)"}, {});
    for (const VerdictChange& v : c.verdict_changes)
      table_row(out, {code(v.key), verdict_badge(v.base), verdict_badge(v.head) + (v.worse() ? " (worse)" : ""),
                      escape_markdown_cell(v.head_reason)});
    out << '\n';
  }

  const auto rows = rows_by_importance(c);
  auto emit = [&](bool changed_only) {
    table_header(out, {"case", "metric", "base", "head", "change", "interval", "result"},
                 {false, false, true, true, true, false, false});
    for (const ComparisonRow& r : rows) {
      const MetricComparison& m = *r.metric;
      const bool changed = m.change == Change::slower || m.change == Change::faster;
      if (changed_only != changed) continue;
      table_row(out, {code(r.case_comparison->key), metric_label(m), fmt(m.base_median),
                      fmt(m.head_median), signed_percent(m.relative_change),
                      "[" + signed_percent(m.relative_low) + ", " +
                          signed_percent(m.relative_high) + "]",
                      change_badge(m.change)});
    }
  };
  const std::size_t changed = c.count(Change::slower) + c.count(Change::faster);
  if (changed > 0) {
    out << "### Changes\n\n";
    emit(true);
    out << '\n';
  }
  if (rows.size() > changed) {
    out << "<details><summary>Unchanged or ambiguous (" << rows.size() - changed
        << ")</summary>\n\n";
    emit(false);
    out << "\n</details>\n\n";
  }
  auto list = [&](const char* title, const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    out << "<details><summary>" << title << " (" << keys.size() << ")</summary>\n\n";
    for (const std::string& k : keys) out << "- " << code(k) << '\n';
    out << "\n</details>\n\n";
  };
  if (!c.only_in_base.empty())
    out << "**" << c.only_in_base.size() << " case(s) of the base MISSING from the head**"
        << (c.options.allow_missing ? " (allowed by `--allow-missing`)" : " (a failure)")
        << "\n\n";
  list("MISSING from head", c.only_in_base);
  list("Only in head", c.only_in_head);
  bool any_expected = false;
  for (const EnvironmentDifference& d : c.environment) any_expected |= d.expected;
  if (any_expected) {
    out << "<details><summary>Expected differences</summary>\n\n";
    for (const EnvironmentDifference& d : c.environment)
      if (d.expected)
        out << "- " << escape_markdown_cell(d.field) << ": " << code(d.base) << " → "
            << code(d.head) << '\n';
    out << "\n</details>\n";
  }
  return out.str();
}

}  // namespace moe::report
