#include "reports/table.hpp"
#include "reports/routing_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/rank_figures.hpp"
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
// Why the vendor peer was not measured, from the first case that says so ("" when none does).
std::string peer_not_measured(const Report& report) {
  for (const CaseResult& c : report.cases) {
    const auto p = c.evidence.find("peer");
    if (p == c.evidence.end() || !p->is_object()) continue;
    const auto measured = p->find("measured"), why = p->find("why_not");
    if (measured != p->end() && measured->is_boolean() && !measured->get<bool>())
      return why != p->end() && why->is_string() ? why->get<std::string>() : "no reason given";
  }
  return "";
}
}  // namespace

std::string render_table(const Report& report) {
  // The vendor peer's columns (probe bandwidth --peer) appear when a case has its figure.
  const bool peer = std::any_of(report.cases.begin(), report.cases.end(), [](const CaseResult& c) {
    return c.metrics.contains("cublas_gpu_us");
  });
  std::vector<std::vector<std::string>> rows{{"probe", "case", "shape", "M", "format", "verdict",
                                              "gpu us", "host us", "busy us", "GB/s", "%read",
                                              "n", "noise%"}};
  if (peer) rows[0].insert(rows[0].begin() + 11, {"cublas us", "ratio"});
  bool summed = false;  // a report from before busy time: the column holds summed durations
  bool per_rank = false;  // an expert-parallel case's figures: the slowest rank's median
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
    } else if (const auto step = c.metrics.find("step_us_max"); step != c.metrics.end()) {
      // Expert parallelism: no samples, a median per rank; the slowest rank's, marked.
      gpu = fmt(step->second.value) + "^";
      if (const auto h = c.metrics.find("host_enqueue_us_max"); h != c.metrics.end())
        host = fmt(h->second.value) + "^";
      per_rank = true;
    }
    rows.push_back({c.probe, c.name + (c.mode && *c.mode != c.name ? "/" + *c.mode : ""),
                    c.shape.value_or("-"), c.m ? std::to_string(*c.m) : "-",
                    c.format.value_or("-"), to_string(c.verdict), gpu, host, kern,
                    metric_or_dash(c, "gbps"), metric_or_dash(c, "pct_of_read_ceiling"), n,
                    noise});
    if (peer)
      rows.back().insert(rows.back().begin() + 11, {metric_or_dash(c, "cublas_gpu_us"),
                                                    metric_or_dash(c, "moebench_over_cublas")});
  }
  std::ostringstream out;
  out << format_columns(rows);
  out << "busy us: median time at least one kernel ran (CUPTI), overlapping kernels once"
      << (summed ? "; * the sum of kernel durations (a report from before busy time)" : "")
      << '\n';
  if (peer)
    out << "cublas us: median GPU time of cuBLAS's grouped GEMM over the same experts and tokens "
           "(bf16, also for int4 cases); ratio: gpu us over cublas us (below 1: moebench faster)\n";
  if (const std::string missing = peer_not_measured(report); !missing.empty())
    out << "cuBLAS peer not measured: " << escape_terminal(missing, kMaxLineChars) << '\n';
  if (per_rank)
    out << "^ expert parallelism: the slowest rank's median step (no samples; per rank below)\n";
  if (const std::string stages = render_stage_table(stage_rows(report)); !stages.empty())
    out << '\n' << stages;
  if (const std::string ranks = render_rank_table(rank_figures(report)); !ranks.empty())
    out << '\n' << ranks;
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
