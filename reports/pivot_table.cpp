#include "reports/pivot_table.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "reports/case_summary.hpp"
#include "reports/metadata.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

namespace {

struct Value {
  double value = 0;
  std::string unit;
};

std::optional<Value> metric_of(const CaseResult& c, const std::string& metric) {
  if (metric == "gpu") {
    const CaseSummary s = summarize_case(c);
    if (!s.gpu_time_us) return std::nullopt;
    return Value{s.gpu_time_us->median, "us"};
  }
  const auto it = c.metrics.find(metric);
  if (it == c.metrics.end()) return std::nullopt;
  return Value{it->second.value, it->second.unit};
}

// A row of one table: the case's coordinates other than M, in the order first seen.
struct RowKey {
  std::string name, shape, format, mode;
  auto tie() const { return std::tie(name, shape, format, mode); }
  bool operator==(const RowKey& o) const { return tie() == o.tie(); }
  bool operator<(const RowKey& o) const { return tie() < o.tie(); }
};

struct Grid {
  std::string probe, unit;
  std::vector<RowKey> rows;
  std::set<int> ms;
  bool any_without_m = false;
  std::map<std::pair<RowKey, std::optional<int>>, double> cells;
};

std::string cell(const std::optional<std::string>& s) {
  return s ? escape_markdown_cell(*s) : std::string("–");
}

// A column is shown only where it tells rows apart: the case name when the probe has several,
// shape and format when any row has one, the mode when rows differ in it (unfiltered) and it is
// not just the case name again.
struct Columns {
  bool name = false, shape = false, format = false, mode = false;
};

Columns columns_of(const Grid& g, bool mode_filtered) {
  Columns c;
  std::set<std::string> names, modes;
  bool mode_is_not_name = false;
  for (const RowKey& r : g.rows) {
    names.insert(r.name);
    modes.insert(r.mode);
    c.shape |= r.shape != "–";
    c.format |= r.format != "–";
    mode_is_not_name |= r.mode != r.name;
  }
  c.name = names.size() > 1;
  c.mode = !mode_filtered && modes.size() > 1 && mode_is_not_name;
  return c;
}

}  // namespace

std::string render_markdown_pivot(const Report& r, const std::string& metric,
                                  const PivotFilter& filter) {
  const std::optional<std::string>& mode = filter.mode;
  std::vector<Grid> grids;
  std::map<Verdict, std::size_t> verdicts;
  for (const CaseResult& c : r.cases) {
    if (c.mutation || (mode && c.mode != mode) || (filter.probe && c.probe != *filter.probe))
      continue;
    ++verdicts[c.verdict];
    const std::optional<Value> v = metric_of(c, metric);
    if (!v) continue;
    auto g = std::find_if(grids.begin(), grids.end(),
                          [&](const Grid& x) { return x.probe == c.probe; });
    if (g == grids.end()) {
      g = grids.insert(grids.end(), Grid{});
      g->probe = c.probe;
      g->unit = v->unit;
    }
    const RowKey row{escape_markdown_cell(c.name), cell(c.shape), cell(c.format), cell(c.mode)};
    if (std::find(g->rows.begin(), g->rows.end(), row) == g->rows.end()) g->rows.push_back(row);
    if (c.m)
      g->ms.insert(*c.m);
    else
      g->any_without_m = true;
    g->cells[{row, c.m}] = v->value;
  }
  if (grids.empty()) {
    std::set<std::string> present{"gpu"};
    for (const CaseResult& c : r.cases)
      for (const auto& [name, _] : c.metrics) present.insert(name);
    std::string list;
    for (const std::string& p : present) list += (list.empty() ? "" : ", ") + p;
    throw UsageError("--pivot " + metric + ": no case" +
                     (filter.probe ? " of probe " + *filter.probe : "") +
                     (mode ? " in mode " + *mode : "") +
                     " has that metric; this report's metrics: " + list);
  }

  std::ostringstream out;
  out << escape_markdown_cell(describe_gpu(r)) << "; " << escape_markdown_cell(describe_tool(r));
  if (const std::string started = metadata_string(r.invocation, "/started_at"); !started.empty())
    out << "; " << started;
  std::size_t total = 0;
  for (const auto& [_, n] : verdicts) total += n;
  out << ". " << total << (total == 1 ? " case:" : " cases:");
  bool first = true;
  for (const auto& [v, n] : verdicts) {
    out << (first ? " " : ", ") << n << ' ' << to_string(v);
    first = false;
  }
  out << ".";
  if (auto rc = read_ceiling_gbps(r)) out << " Read ceiling " << fmt(*rc) << " GB/s.";
  out << "\n";
  for (const Grid& g : grids) {
    const Columns shown = columns_of(g, mode.has_value());
    out << "\n`" << escape_markdown_cell(g.probe) << "`: " << escape_markdown_cell(metric);
    if (!g.unit.empty()) out << " (" << escape_markdown_cell(g.unit) << ")";
    if (mode) out << ", mode " << escape_markdown_cell(*mode);
    out << "\n\n";
    std::vector<std::optional<int>> columns;
    if (g.any_without_m) columns.push_back(std::nullopt);
    for (int m : g.ms) columns.push_back(m);
    std::vector<std::string> header;
    if (shown.name) header.push_back("case");
    if (shown.shape) header.push_back("shape");
    if (shown.format) header.push_back("format");
    if (shown.mode) header.push_back("mode");
    const std::size_t labels = header.size();
    for (const auto& m : columns)
      header.push_back(m ? "M=" + std::to_string(*m) : escape_markdown_cell(metric));
    out << '|';
    for (const std::string& h : header) out << ' ' << h << " |";
    out << "\n|";
    for (std::size_t i = 0; i < header.size(); ++i) out << (i < labels ? " --- |" : " ---: |");
    out << '\n';
    for (const RowKey& row : g.rows) {
      out << '|';
      if (shown.name) out << ' ' << row.name << " |";
      if (shown.shape) out << ' ' << row.shape << " |";
      if (shown.format) out << ' ' << row.format << " |";
      if (shown.mode) out << ' ' << row.mode << " |";
      for (const auto& m : columns) {
        const auto it = g.cells.find({row, m});
        out << ' ' << (it == g.cells.end() ? "–" : fmt(it->second)) << " |";
      }
      out << '\n';
    }
  }
  return out.str();
}

}  // namespace moe::report
