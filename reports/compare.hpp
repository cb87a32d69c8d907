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

// What is compared. Times: lower is better; GB/s and percent of the read ceiling: higher is
// better. `pct` divides out the machine (each report by its own read ceiling), so it is the
// metric for reports from different GPUs.
enum class ComparedMetric { gpu_time, host_time, gbps, pct_of_ceiling };
std::string to_string(ComparedMetric m);       // "gpu", "host", "gbps", "pct"
std::string display_name(ComparedMetric m);    // "GPU time (us)", ...
ComparedMetric compared_metric_from_string(const std::string& s);  // UsageError naming valid
// --metric's values in the order given; UsageError naming an invalid or a repeated one.
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
  // A case of the base that the head lacks is MISSING and fails the comparison unless this is
  // set (a head that ran a subset on purpose).
  bool allow_missing = false;

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
  // A metric came out SLOWER, a verdict got worse, or a base case is MISSING from the head
  // (unless options.allow_missing): `moebench compare` exits 1.
  bool regressed() const;
};

// `base` and `head` must outlive the result (it points into them). Raises UsageError when no
// case is in both reports (a CI job pointed at the wrong base), naming each report's probes.
// Labels that name one file (or reports of one run) are warned about.
Comparison compare_reports(const Report& base, const Report& head, const CompareOptions& options,
                           std::string base_label = "base", std::string head_label = "head");

// Decides one metric from two series (exposed for tests and the microbenchmarks).
MetricComparison compare_series(const std::vector<double>& base, const std::vector<double>& head,
                                ComparedMetric metric, const CompareOptions& options);

// The per-sample series a metric is judged on; GB/s per sample is the reported GB/s scaled by
// median / sample time (the same bytes over each sample's time). Empty when not available.
std::vector<double> metric_series(const CaseResult& c, const std::string& measurement,
                                  ComparedMetric metric);

// An expert-parallel case has no sampled measurement: each rank's median is in
// evidence.per_rank (step_us, host_enqueue_us, exchange_gbps, share_of_ceiling). Those values,
// one a rank, are the series compared as measurement "per_rank" (with fewer ranks than
// --min-samples the range rule decides). Empty when the case has no per-rank figure.
std::vector<double> per_rank_series(const CaseResult& c, ComparedMetric metric);

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
// (reports/environment_diff.cpp). Commits are listed too, marked expected. Also: read ceilings
// more than 1% apart, and a shape name whose dimensions differ between the two.
std::vector<EnvironmentDifference> environment_differences(const Report& base, const Report& head);

// "bandwidth (12 cases), copy (3 cases)", or "no cases": what a report holds, for messages.
std::string probe_summary(const Report& r);

// Whether a report has a case with a shape but no shape fingerprint (written before them):
// compare and noise then match cases by shape name (CaseResult::key(false)), with a warning.
bool lacks_fingerprints(const Report& r);

// A warning when two inputs are the same file, or copies of one run; "" otherwise.
std::string same_source(const Report& a, const Report& b, const std::string& a_label,
                        const std::string& b_label);
}  // namespace moe::report
