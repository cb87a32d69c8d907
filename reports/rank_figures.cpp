#include "reports/rank_figures.hpp"

#include <sstream>

#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string case_label(const CaseResult& c) {
  std::string s = c.probe + "/" + c.name;
  if (c.mode && *c.mode != c.name) s += "/" + *c.mode;
  if (c.shape) s += " " + *c.shape;
  if (c.m) s += " M=" + std::to_string(*c.m);
  return s;
}

}  // namespace

const RankFigure* RankFigures::find(const std::string& name) const {
  for (const RankFigure& f : figures)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<RankFigures> rank_figures(const Report& r) {
  std::vector<RankFigures> out;
  for (const CaseResult& c : r.cases) {
    RankFigures row;
    row.c = &c;
    const auto per_rank = c.evidence.find("per_rank");
    row.ranks = per_rank != c.evidence.end() && per_rank->is_array() ? per_rank->size() : 0;
    for (const auto& [key, metric] : c.metrics) {
      if (!ends_with(key, "_min")) continue;
      const std::string name = key.substr(0, key.size() - 4);
      const auto mean = c.metrics.find(name + "_mean"), max = c.metrics.find(name + "_max");
      if (mean == c.metrics.end() || max == c.metrics.end()) continue;
      row.figures.push_back({name, metric.unit, metric.value, mean->second.value, max->second.value});
    }
    if (!row.figures.empty()) out.push_back(std::move(row));
  }
  return out;
}

std::string render_rank_table(const std::vector<RankFigures>& rows) {
  if (rows.empty()) return "";
  std::vector<std::vector<std::string>> cells{{"case", "ranks", "figure", "min", "mean", "max", "unit"}};
  for (const RankFigures& r : rows)
    for (const RankFigure& f : r.figures)
      cells.push_back({case_label(*r.c), std::to_string(r.ranks), f.name, fmt(f.min), fmt(f.mean),
                       fmt(f.max), f.unit});
  return "per rank (expert parallelism: each rank's median; the step is as slow as its slowest rank)\n" +
         format_columns(cells);
}

std::string render_rank_markdown(const std::vector<RankFigures>& rows) {
  if (rows.empty()) return "";
  std::ostringstream out;
  out << "\n### Per rank (expert parallelism)\n\nEach rank's median; min, mean and max over the "
         "ranks (every rank's value is in the case's `evidence.per_rank`).\n\n"
      << "| case | ranks | figure | min | mean | max | unit |\n| --- | ---: | --- | ---: | ---: | ---: | --- |\n";
  for (const RankFigures& r : rows)
    for (const RankFigure& f : r.figures)
      out << "| " << escape_markdown_cell(case_label(*r.c)) << " | " << r.ranks << " | "
          << escape_markdown_cell(f.name) << " | " << fmt(f.min) << " | " << fmt(f.mean) << " | "
          << fmt(f.max) << " | " << escape_markdown_cell(f.unit) << " |\n";
  return out.str();
}

std::string render_rank_html(const std::vector<RankFigures>& rows) {
  if (rows.empty()) return "";
  std::ostringstream out;
  out << "<h2>Per rank</h2>\n<p>Expert parallelism: each rank's median; min, mean and max over "
         "the ranks.</p>\n<div class=\"panel\" style=\"padding:0\"><table>\n<thead><tr><th>case</th>"
         "<th>ranks</th><th>figure</th><th>min</th><th>mean</th><th>max</th><th>unit</th></tr>"
         "</thead>\n<tbody>\n";
  for (const RankFigures& r : rows)
    for (const RankFigure& f : r.figures)
      out << "<tr><td>" << escape_html(case_label(*r.c)) << "</td><td class=\"n\">" << r.ranks
          << "</td><td>" << escape_html(f.name) << "</td><td class=\"n\">" << fmt(f.min)
          << "</td><td class=\"n\">" << fmt(f.mean) << "</td><td class=\"n\">" << fmt(f.max)
          << "</td><td>" << escape_html(f.unit) << "</td></tr>\n";
  out << "</tbody></table></div>\n";
  return out.str();
}

}  // namespace moe::report
