#include "reports/noise.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include "common/errors.hpp"
#include "reports/statistics.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

using nlohmann::json;

void NoiseOptions::validate() const { validate_metrics_and_threshold(metrics, max_spread); }

MedianSpread median_spread(const std::vector<double>& medians) {
  MedianSpread s;
  s.medians = medians;
  if (medians.empty()) return s;
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  s.min = *lo;
  s.max = *hi;
  s.mean = std::accumulate(medians.begin(), medians.end(), 0.0) /
           static_cast<double>(medians.size());
  s.spread = s.mean != 0 ? (s.max - s.min) / std::abs(s.mean) : 0;
  s.rsd = relative_stddev(medians);
  return s;
}

std::size_t NoiseSummary::noisy() const {
  return static_cast<std::size_t>(
      std::count_if(cases.begin(), cases.end(), [](const CaseNoise& c) { return c.noisy; }));
}

namespace {

std::string pct(double fraction) { return fmt(100 * fraction, 3); }

// The same case's runs, before their medians are taken.
struct Collected {
  CaseNoise noise;
  std::vector<double> medians;
};

// Anything that makes two runs measure different things, in words, per run against the first.
void environment_warnings(const std::vector<Report>& reports,
                          const std::vector<std::string>& labels,
                          std::vector<std::string>& warnings) {
  for (std::size_t i = 1; i < reports.size(); ++i)
    for (const EnvironmentDifference& d : environment_differences(reports[0], reports[i]))
      warnings.push_back(labels[0] + " and " + labels[i] + " differ in " + d.field + ": " +
                         d.base + " vs " + d.head);
}

}  // namespace

NoiseSummary run_to_run_noise(const std::vector<Report>& reports,
                              const std::vector<std::string>& labels,
                              const NoiseOptions& options) {
  options.validate();
  if (reports.size() < 2 || labels.size() != reports.size())
    throw UsageError("noise needs at least two reports (separate runs of the same cases), got " +
                     std::to_string(reports.size()));
  NoiseSummary out;
  out.options = options;
  out.labels = labels;
  environment_warnings(reports, labels, out.warnings);

  // Matched by full key; if a run predates shape fingerprints, all by shape name (warned).
  const bool by_name = std::any_of(reports.begin(), reports.end(), lacks_fingerprints);
  if (by_name)
    out.warnings.push_back("a report has cases without shape fingerprints (written before "
                           "moebench recorded them): cases are matched by shape name alone");
  using Key = std::tuple<std::string, std::string, ComparedMetric>;
  std::map<Key, std::size_t> index;  // into `collected`, which keeps first-seen order
  std::vector<Collected> collected;
  for (std::size_t r = 0; r < reports.size(); ++r) {
    std::set<std::string> seen;
    for (const CaseResult& c : reports[r].cases) {
      if (!seen.insert(c.key(!by_name)).second) {
        out.warnings.push_back(labels[r] + " has case " + c.key(!by_name) + " twice; the first counts");
        continue;
      }
      for (const auto& [name, m] : c.measurements) {
        if (const std::string note = m.throttling_note(); !note.empty())
          out.warnings.push_back(labels[r] + " case " + c.key(!by_name) + " [" + name + "]: " + note);
        for (ComparedMetric metric : options.metrics) {
          const std::vector<double> series = metric_series(c, name, metric);
          if (series.empty()) continue;  // not applicable (no GB/s for this case)
          const Key key{c.key(!by_name), name, metric};
          auto [it, added] = index.emplace(key, collected.size());
          if (added) collected.push_back({{c.key(!by_name), name, metric, {}, {}, 0, false}, {}});
          Collected& col = collected[it->second];
          col.noise.runs.push_back(r);
          col.medians.push_back(summarize(series).median);
          col.noise.max_run_rsd = std::max(col.noise.max_run_rsd, relative_stddev(series));
        }
      }
    }
  }
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (std::size_t j = i + 1; j < reports.size(); ++j)
      if (std::string same = same_source(reports[i], reports[j], labels[i], labels[j]);
          !same.empty()) {
        same.replace(0, std::string("base and head").size(), labels[i] + " and " + labels[j]);
        out.warnings.insert(out.warnings.begin(), same);
      }
  for (Collected& col : collected) {
    if (col.medians.size() < 2) {
      out.warnings.push_back("case " + col.noise.key + " [" + col.noise.measurement + ", " +
                             to_string(col.noise.metric) + "] is in only one run (" +
                             labels[col.noise.runs.front()] + "): left out");
      continue;
    }
    if (col.medians.size() < reports.size())
      out.warnings.push_back("case " + col.noise.key + " [" + col.noise.measurement + ", " +
                             to_string(col.noise.metric) + "] is in " +
                             std::to_string(col.medians.size()) + " of " +
                             std::to_string(reports.size()) + " runs");
    col.noise.spread = median_spread(col.medians);
    col.noise.noisy = col.noise.spread.spread > options.max_spread;
    out.cases.push_back(std::move(col.noise));
  }
  if (out.cases.empty()) {
    std::string held;
    for (std::size_t r = 0; r < reports.size(); ++r)
      held += (held.empty() ? "" : "; ") + labels[r] + " has " + probe_summary(reports[r]);
    throw UsageError("no case is in two of the reports: " + held +
                     " (are these runs of the same cases?)");
  }
  return out;
}

std::string render_noise_table(const NoiseSummary& s) {
  std::vector<std::vector<std::string>> rows{{"case", "metric", "runs", "median per run",
                                              "mean", "spread%", "rsd%", "run rsd%", "noise"}};
  for (const CaseNoise& c : s.cases) {
    std::string medians;
    for (double m : c.spread.medians) medians += (medians.empty() ? "" : " / ") + fmt(m);
    rows.push_back({c.key + (c.measurement == "main" ? "" : " [" + c.measurement + "]"),
                    to_string(c.metric), std::to_string(c.runs.size()), medians,
                    fmt(c.spread.mean), pct(c.spread.spread), pct(c.spread.rsd),
                    pct(c.max_run_rsd), c.noisy ? "NOISY" : "ok"});
  }
  std::ostringstream out;
  out << format_columns(rows);
  out << (s.cases.size() - s.noisy()) << " of " << s.cases.size() << " within "
      << pct(s.options.max_spread) << "% over " << s.labels.size()
      << " runs (spread = (max - min) / mean of the per-run medians; rsd = their standard\n"
         "deviation / mean; run rsd = the largest relative standard deviation within one run)\n";
  for (const std::string& w : s.warnings)
    out << "warning: " << escape_terminal(w, kMaxLineChars) << '\n';
  return out.str();
}

json to_json(const NoiseSummary& s) {
  json metrics = json::array();
  for (ComparedMetric m : s.options.metrics) metrics.push_back(to_string(m));
  json cases = json::array();
  for (const CaseNoise& c : s.cases) {
    json runs = json::array();
    for (std::size_t r : c.runs) runs.push_back(s.labels[r]);
    cases.push_back({{"key", c.key},
                     {"measurement", c.measurement},
                     {"metric", to_string(c.metric)},
                     {"runs", runs},
                     {"medians", c.spread.medians},
                     {"mean", c.spread.mean},
                     {"min", c.spread.min},
                     {"max", c.spread.max},
                     {"spread", c.spread.spread},
                     {"rsd", c.spread.rsd},
                     {"max_run_rsd", c.max_run_rsd},
                     {"noisy", c.noisy}});
  }
  return {{"reports", s.labels},
          {"metrics", metrics},
          {"max_spread", s.options.max_spread},
          {"cases", cases},
          {"noisy", s.noisy()},
          {"warnings", s.warnings}};
}

}  // namespace moe::report
