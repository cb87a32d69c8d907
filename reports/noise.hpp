#pragma once
// Run-to-run noise (`moebench noise RUN1.json RUN2.json ...`): the same cases measured by
// separate processes, the median of each run, and how far those medians spread. A run's own
// relative standard deviation says how well it pinned its median; this says whether another
// run would find the same one (the issue target: under 1% over 3 runs).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/compare.hpp"
#include "reports/report.hpp"

namespace moe::report {

struct NoiseOptions {
  std::vector<ComparedMetric> metrics{ComparedMetric::gpu_time};
  // A spread ((max - min) / mean of the run medians) above this fraction is NOISY. The range,
  // not the standard deviation: with 3 runs it is the stricter of the two, and it is what a
  // reader comparing two of the runs would see.
  double max_spread = 0.01;

  void validate() const;  // UsageError naming the bad value and the valid range
};

// The spread of one case's per-run medians.
struct MedianSpread {
  std::vector<double> medians;  // one per run that has the case
  double mean = 0;              // of the medians
  double min = 0, max = 0;
  double spread = 0;  // (max - min) / mean; 0 for a zero mean
  double rsd = 0;     // sample standard deviation / mean of the medians (n - 1)
};
MedianSpread median_spread(const std::vector<double>& medians);

struct CaseNoise {
  std::string key;          // CaseResult::key()
  std::string measurement;  // "main", ...
  ComparedMetric metric = ComparedMetric::gpu_time;
  std::vector<std::size_t> runs;  // indices of the reports that have the case, in order
  MedianSpread spread;
  double max_run_rsd = 0;  // the largest relative standard deviation within one run
  bool noisy = false;      // spread.spread above NoiseOptions::max_spread
};

struct NoiseSummary {
  NoiseOptions options;
  std::vector<std::string> labels;  // one per report (file paths)
  std::vector<CaseNoise> cases;     // in first-seen order over the reports
  std::vector<std::string> warnings;  // cases in fewer runs, machines or options that differ

  std::size_t noisy() const;
};

// Cases are matched by key and measurement name; a case in fewer than two runs is left out
// with a warning. Raises UsageError for fewer than two reports, and when no case is in two of
// them (naming each report's probes). The same file twice is a warning.
NoiseSummary run_to_run_noise(const std::vector<Report>& reports,
                              const std::vector<std::string>& labels, const NoiseOptions& options);

std::string render_noise_table(const NoiseSummary& s);
nlohmann::json to_json(const NoiseSummary& s);

}  // namespace moe::report
