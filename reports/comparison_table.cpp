#include "reports/comparison_table.hpp"

#include <sstream>

#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

std::string render_comparison_table(const Comparison& c) {
  std::ostringstream out;
  auto line = [](const std::string& t) { return escape_terminal(t, kMaxLineChars); };
  out << "moebench compare: " << line(c.base_label) << " -> " << line(c.head_label) << "\n";
  bool any_warning = false;
  for (const EnvironmentDifference& d : c.environment) {
    if (d.expected) continue;
    if (!any_warning) out << "\nwarning: the reports differ in what they ran on:\n";
    any_warning = true;
    out << "  " << line(d.field) << ": " << line(d.base) << " -> " << line(d.head) << '\n';
  }
  for (const std::string& w : c.warnings) out << "warning: " << line(w) << '\n';

  if (!c.verdict_changes.empty()) {
    out << "\nverdict changes:\n";
    std::vector<std::vector<std::string>> rows{{"base", "head", "", "case", "reason"}};
    for (const VerdictChange& v : c.verdict_changes)
      rows.push_back({to_string(v.base), to_string(v.head), v.worse() ? "WORSE" : "better",
                      v.key, v.head_reason});
    out << format_columns(rows);
  }

  out << '\n';
  std::vector<std::vector<std::string>> rows{
      {"case", "metric", "base", "head", "change", "interval", "p", "n", "result"}};
  for (const ComparisonRow& r : rows_by_importance(c)) {
    const MetricComparison& m = *r.metric;
    std::string metric = to_string(m.metric);
    if (m.measurement != "main") metric += " [" + m.measurement + "]";
    rows.push_back({r.case_comparison->key, metric, fmt(m.base_median), fmt(m.head_median),
                    signed_percent(m.relative_change),
                    "[" + signed_percent(m.relative_low) + ", " +
                        signed_percent(m.relative_high) + "]",
                    m.method != "rank" ? "-" : format_p_value(m.p_value),
                    std::to_string(m.base_samples) + "/" + std::to_string(m.head_samples),
                    to_string(m.change)});
  }
  if (rows.size() > 1)
    out << format_columns(rows);
  else
    out << "no metric to compare: no case is in both reports with samples\n";

  if (!c.only_in_base.empty()) {
    out << "\nMISSING from head (" << c.only_in_base.size() << "; "
        << (c.options.allow_missing ? "allowed by --allow-missing" : "a failure: --allow-missing accepts it")
        << "):\n";
    for (const std::string& k : c.only_in_base) out << "  MISSING " << line(k) << '\n';
  }
  if (!c.only_in_head.empty()) {
    out << "\nonly in head (" << c.only_in_head.size() << "):\n";
    for (const std::string& k : c.only_in_head) out << "  " << line(k) << '\n';
  }
  std::size_t worse = 0;
  for (const VerdictChange& v : c.verdict_changes) worse += v.worse();
  out << "\n" << c.count(Change::slower) << " slower, " << c.count(Change::faster)
      << " faster, " << c.count(Change::same) << " same, " << c.count(Change::ambiguous)
      << " ambiguous; " << c.only_in_base.size() << " missing; " << worse << " verdict(s) worse (threshold " << fmt(100 * c.options.min_effect, 2)
      << "%, confidence " << fmt(100 * c.options.confidence, 3) << "%)\n";
  out << (c.regressed() ? "REGRESSION\n" : "no regression\n");
  return out.str();
}

}  // namespace moe::report
