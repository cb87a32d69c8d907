#include "reports/table.hpp"
#include "reports/routing_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/stage_view.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

std::string fmt(double v, int precision) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  const double a = std::abs(v);
  const int decimals = a >= 1000 ? 0 : a >= 100 ? std::max(0, precision - 3)
                     : a >= 10   ? std::max(0, precision - 2)
                                 : std::max(0, precision - 1);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_p_value(double p) {
  if (!std::isfinite(p)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

namespace {
// Characters, not bytes: the columns of escaped UTF-8 text ("…") line up.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}
}  // namespace

std::string format_columns(const std::vector<std::vector<std::string>>& rows_in,
                           std::size_t max_cell_chars) {
  // Every cell as the terminal may show it: escaped, and cut at max_cell_chars.
  std::vector<std::vector<std::string>> rows = rows_in;
  for (auto& row : rows)
    for (std::string& cell : row) cell = escape_terminal(cell, max_cell_chars);
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], display_width(row[i]));
    }
  std::ostringstream out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      out << rows[r][i];
      if (i + 1 < rows[r].size())
        out << std::string(width[i] - display_width(rows[r][i]) + 2, ' ');
    }
    out << '\n';
    if (r == 0) {
      std::size_t total = 0;
      for (std::size_t w : width) total += w + 2;
      out << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
    }
  }
  return out.str();
}

namespace {
std::string metric_or_dash(const CaseResult& c, const char* name) {
  auto it = c.metrics.find(name);
  return it == c.metrics.end() ? "-" : fmt(it->second.value);
}
}  // namespace

std::string render_table(const Report& report) {
  std::vector<std::vector<std::string>> rows{{"probe", "case", "shape", "M", "format", "verdict",
                                              "gpu us", "host us", "busy us", "GB/s", "%read",
                                              "n", "noise%"}};
  bool summed = false;  // a report from before busy time: the column holds summed durations
  for (const CaseResult& c : report.cases) {
    std::string gpu = "-", host = "-", kern = "-", n = "-", noise = "-";
    auto it = c.measurements.find("main");
    if (it == c.measurements.end() && !c.measurements.empty()) it = c.measurements.begin();
    if (it != c.measurements.end()) {
      const Stats g = it->second.gpu_time();
      gpu = fmt(g.median);
      if (!it->second.host_time_us.empty()) host = fmt(it->second.host_time().median);
      // Busy time: the time at least one kernel ran (kernel_busy_us); overlapping kernels
      // (PDL) counted once. Older reports have only the sum of durations, marked "*".
      if (it->second.kernel_timing) {
        kern = fmt(summarize(it->second.time_in_kernels_us()).median);
        if (it->second.kernel_busy_us.empty()) {
          kern += "*";
          summed = true;
        }
      }
      n = std::to_string(g.count);
      noise = fmt(100 * g.rsd, 2);
    }
    rows.push_back({c.probe, c.name + (c.mode && *c.mode != c.name ? "/" + *c.mode : ""),
                    c.shape.value_or("-"), c.m ? std::to_string(*c.m) : "-",
                    c.format.value_or("-"), to_string(c.verdict), gpu, host, kern,
                    metric_or_dash(c, "gbps"), metric_or_dash(c, "pct_of_read_ceiling"), n,
                    noise});
  }
  std::ostringstream out;
  out << format_columns(rows);
  out << "busy us: median time at least one kernel ran (CUPTI), overlapping kernels once"
      << (summed ? "; * the sum of kernel durations (a report from before busy time)" : "")
      << '\n';
  if (const std::string stages = render_stage_table(stage_rows(report)); !stages.empty())
    out << '\n' << stages;
  for (const CaseResult& c : report.cases) {
    if (c.verdict == Verdict::pass) continue;
    out << to_string(c.verdict) << "  " << escape_terminal(c.key(), kMaxCellChars) << ": "
        << escape_terminal(c.reason, kMaxLineChars) << '\n';
    for (const Check& k : c.checks)
      if (!k.passed)
        out << "    check " << escape_terminal(k.name, kMaxCellChars) << ": "
            << escape_terminal(k.detail, kMaxLineChars) << '\n';
  }
  out << render_histogram_table(report);
  return out.str();
}

}  // namespace moe::report
