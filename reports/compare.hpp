#pragma once
// Comparison of two reports (`moebench compare BASE HEAD`). The method and its thresholds are
// documented in reports/COMPARE.md; in short: cases are matched by CaseResult::key() and
// measurement name, and each metric's two sample series are compared by the Hodges-Lehmann
// shift and its rank-test confidence interval against a minimum relative effect.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/rank_test.hpp"
#include "reports/report.hpp"

namespace moe::report {

// What is compared. Times: lower is better; GB/s: higher is better.
enum class ComparedMetric { gpu_time, host_time, gbps };
std::string to_string(ComparedMetric m);       // "gpu", "host", "gbps"
std::string display_name(ComparedMetric m);    // "GPU time (us)", ...
ComparedMetric compared_metric_from_string(const std::string& s);  // UsageError naming valid
// --metric's values: each once, in the order first given; UsageError naming an invalid one.
std::vector<ComparedMetric> compared_metrics_from_strings(const std::vector<std::string>& names);

// The checks --metric and --threshold share in compare and noise: UsageError unless metrics
// is non-empty and 0 < threshold < 1 (a fraction; the message shows it in percent).
void validate_metrics_and_threshold(const std::vector<ComparedMetric>& metrics, double threshold);

enum class Change { faster, slower, same, ambiguous };
std::string to_string(Change c);  // FASTER, SLOWER, SAME, AMBIGUOUS

struct CompareOptions {
  std::vector<ComparedMetric> metrics{ComparedMetric::gpu_time};
  // A change smaller than this fraction of the base median is SAME (reports/COMPARE.md).
  double min_effect = 0.02;
  // Confidence of the shift interval; 0.99 keeps false alarms rare over a suite of cases.
  double confidence = 0.99;
  // Below this many samples on either side the rank interval is too wide to be useful, and the
  // range rule (disjoint [min, max]) decides instead.
  std::size_t min_samples_for_rank_test = 8;

  void validate() const;  // UsageError naming the bad value and the valid range
};

struct MetricComparison {
  std::string measurement;  // "main", ...
  ComparedMetric metric = ComparedMetric::gpu_time;
  Change change = Change::ambiguous;
  std::size_t base_samples = 0, head_samples = 0;
  double base_median = 0, head_median = 0;
  // Relative shift of head against base (head/base - 1 in the metric's own unit), with its
  // interval; for the range rule the interval is the span of all differences.
  double relative_change = 0, relative_low = 0, relative_high = 0;
  double p_value = 1;           // Mann-Whitney U, two-sided (1 when the range rule decided)
  std::string method;           // "rank" or "range"
  std::string why;              // the decision in words
  std::vector<double> base_series, head_series;  // what was compared (for the plots)
};

struct VerdictChange {
  std::string key;
  Verdict base = Verdict::pass, head = Verdict::pass;
  std::string head_reason;
  bool worse() const { return severity(head) > severity(base); }
};

struct CaseComparison {
  std::string key;
  const CaseResult* base = nullptr;  // into the compared reports, which must outlive this
  const CaseResult* head = nullptr;
  std::vector<MetricComparison> metrics;
};

struct EnvironmentDifference {
  std::string field;  // "GPU name", "CUDA driver", ...
  std::string base, head;
  bool expected = false;  // a commit difference is the point of a comparison, not a warning
};

struct Comparison {
  CompareOptions options;
  std::string base_label, head_label;  // file paths
  const Report* base = nullptr;
  const Report* head = nullptr;
  std::vector<EnvironmentDifference> environment;
  std::vector<std::string> warnings;  // throttling, missing samples, ...
  std::vector<VerdictChange> verdict_changes;
  std::vector<CaseComparison> cases;  // matched cases, in head order
  std::vector<std::string> only_in_base, only_in_head;

  std::size_t count(Change c) const;
  // A metric came out SLOWER or a verdict got worse: `moebench compare` exits 1.
  bool regressed() const;
};

// `base` and `head` must outlive the result (it points into them).
Comparison compare_reports(const Report& base, const Report& head, const CompareOptions& options,
                           std::string base_label = "base", std::string head_label = "head");

// Decides one metric from two series (exposed for tests and the microbenchmarks).
MetricComparison compare_series(const std::vector<double>& base, const std::vector<double>& head,
                                ComparedMetric metric, const CompareOptions& options);

// The per-sample series a metric is judged on; GB/s per sample is the reported GB/s scaled by
// median / sample time (the same bytes over each sample's time). Empty when not available.
std::vector<double> metric_series(const CaseResult& c, const std::string& measurement,
                                  ComparedMetric metric);

nlohmann::json to_json(const Comparison& c);

// Every compared metric, most important first (SLOWER, FASTER, AMBIGUOUS, SAME), stable within
// each group: the order every renderer lists them in.
struct ComparisonRow {
  const CaseComparison* case_comparison;
  const MetricComparison* metric;
};
std::vector<ComparisonRow> rows_by_importance(const Comparison& c);

// "+4.98%": a relative change as a signed percentage.
std::string signed_percent(double fraction);

}  // namespace moe::report

namespace moe::report {
// Tool, GPU, driver, clocks and measurement options that differ between the two reports
// (reports/environment_diff.cpp). Commits are listed too, marked expected.
std::vector<EnvironmentDifference> environment_differences(const Report& base, const Report& head);
}  // namespace moe::report
