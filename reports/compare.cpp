#include "reports/compare.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/errors.hpp"
#include "reports/table.hpp"

namespace moe::report {

using nlohmann::json;

std::string to_string(ComparedMetric m) {
  switch (m) {
    case ComparedMetric::gpu_time: return "gpu";
    case ComparedMetric::host_time: return "host";
    case ComparedMetric::gbps: return "gbps";
    case ComparedMetric::pct_of_ceiling: return "pct";
  }
  return "gpu";
}

std::string display_name(ComparedMetric m) {
  switch (m) {
    case ComparedMetric::gpu_time: return "GPU time (us)";
    case ComparedMetric::host_time: return "host enqueue time (us)";
    case ComparedMetric::gbps: return "GB/s";
    case ComparedMetric::pct_of_ceiling: return "% of read ceiling";
  }
  return "";
}

ComparedMetric compared_metric_from_string(const std::string& s) {
  if (s == "gpu") return ComparedMetric::gpu_time;
  if (s == "host") return ComparedMetric::host_time;
  if (s == "gbps") return ComparedMetric::gbps;
  if (s == "pct") return ComparedMetric::pct_of_ceiling;
  throw UsageError("--metric '" + s + "' is not valid; valid: gpu, host, gbps, pct");
}

std::vector<ComparedMetric> compared_metrics_from_strings(const std::vector<std::string>& names) {
  std::vector<ComparedMetric> out;
  for (const std::string& name : names) {
    const ComparedMetric metric = compared_metric_from_string(name);
    if (std::find(out.begin(), out.end(), metric) != out.end())
      throw UsageError("--metric '" + name + "' is given twice");
    out.push_back(metric);
  }
  return out;
}

std::string to_string(Change c) {
  switch (c) {
    case Change::faster: return "FASTER";
    case Change::slower: return "SLOWER";
    case Change::same: return "SAME";
    case Change::ambiguous: return "AMBIGUOUS";
  }
  return "AMBIGUOUS";
}

namespace {
std::string as_typed(double v) {  // the value as the user typed it, nan and inf included
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

void validate_metrics_and_threshold(const std::vector<ComparedMetric>& metrics, double threshold) {
  if (metrics.empty())
    throw UsageError("--metric must name at least one of gpu, host, gbps, pct");
  if (!(threshold > 0 && threshold < 1))
    throw UsageError("--threshold " + as_typed(100 * threshold) +
                     " is out of range: a percentage above 0 and below 100");
}

void CompareOptions::validate() const {
  validate_metrics_and_threshold(metrics, min_effect);
  if (!(confidence >= 0.5 && confidence < 1))
    throw UsageError("--confidence " + as_typed(confidence) + " is out of range: 0.5 <= c < 1");
  if (min_samples_for_rank_test < 2)
    throw UsageError("--min-samples " + std::to_string(min_samples_for_rank_test) +
                     " is out of range: at least 2");
}

std::size_t Comparison::count(Change c) const {
  std::size_t n = 0;
  for (const CaseComparison& cc : cases)
    for (const MetricComparison& m : cc.metrics) n += m.change == c;
  return n;
}

bool Comparison::regressed() const {
  for (const VerdictChange& v : verdict_changes)
    if (v.worse()) return true;
  if (!only_in_base.empty() && !options.allow_missing) return true;
  return count(Change::slower) > 0;
}

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, 0.5);
}

std::string pct(double fraction) {
  std::ostringstream s;
  s << (fraction >= 0 ? "+" : "") << fmt(100 * fraction, 2) << '%';
  return s.str();
}

// Which way is better: times fall, bandwidth (and its share of the ceiling) rises.
bool higher_is_better(ComparedMetric m) {
  return m == ComparedMetric::gbps || m == ComparedMetric::pct_of_ceiling;
}

const Measurement* primary_measurement(const CaseResult& c) {
  auto it = c.measurements.find("main");
  if (it == c.measurements.end() && c.measurements.size() == 1) it = c.measurements.begin();
  return it == c.measurements.end() ? nullptr : &it->second;
}

}  // namespace

bool lacks_fingerprints(const Report& r) {
  return std::any_of(r.cases.begin(), r.cases.end(), [](const CaseResult& c) {
    return c.shape && !c.shape_fingerprint;
  });
}

std::string probe_summary(const Report& r) {
  std::vector<std::pair<std::string, std::size_t>> probes;  // first-seen order
  for (const CaseResult& c : r.cases) {
    auto it = std::find_if(probes.begin(), probes.end(),
                           [&](const auto& p) { return p.first == c.probe; });
    if (it == probes.end())
      probes.emplace_back(c.probe, 1);
    else
      ++it->second;
  }
  if (probes.empty()) return "no cases";
  std::string out;
  for (const auto& [probe, n] : probes)
    out += (out.empty() ? "" : ", ") + probe + " (" + std::to_string(n) +
           (n == 1 ? " case)" : " cases)");
  return out;
}

std::string same_source(const Report& base, const Report& head, const std::string& base_label,
                        const std::string& head_label) {
  std::error_code ec;
  if (std::filesystem::equivalent(base_label, head_label, ec))
    return "base and head are the same file (" + base_label +
           "): the comparison says nothing about a change";
  // Two copies of one run: same build, start time, command line and machine.
  if (base.invocation.is_object() && !base.invocation.empty() &&
      base.invocation.contains("started_at") && base.invocation == head.invocation &&
      base.environment == head.environment && base.tool == head.tool)
    return "base and head are copies of one run (same invocation and environment): the "
           "comparison says nothing about a change";
  return "";
}

std::vector<double> metric_series(const CaseResult& c, const std::string& measurement,
                                  ComparedMetric metric) {
  auto it = c.measurements.find(measurement);
  if (it == c.measurements.end()) return {};
  const Measurement& m = it->second;
  switch (metric) {
    case ComparedMetric::gpu_time: return m.gpu_time_us;
    case ComparedMetric::host_time: return m.host_time_us;
    case ComparedMetric::gbps:
    case ComparedMetric::pct_of_ceiling: {
      // The reported GB/s (and its percent of the run's read ceiling) belongs to the primary
      // measurement (bytes over its median time).
      auto g = c.metrics.find(metric == ComparedMetric::gbps ? "gbps" : "pct_of_read_ceiling");
      if (g == c.metrics.end() || primary_measurement(c) != &m || m.gpu_time_us.empty())
        return {};
      const double median = median_of(m.gpu_time_us);
      std::vector<double> out;
      out.reserve(m.gpu_time_us.size());
      for (double t : m.gpu_time_us)
        if (t > 0) out.push_back(g->second.value * median / t);
      return out;
    }
  }
  return {};
}

MetricComparison compare_series(const std::vector<double>& base, const std::vector<double>& head,
                                ComparedMetric metric, const CompareOptions& o) {
  MetricComparison r;
  r.metric = metric;
  r.base_samples = base.size();
  r.head_samples = head.size();
  r.base_series = base;
  r.head_series = head;
  if (base.empty() || head.empty()) {
    r.change = Change::ambiguous;
    r.why = "no samples in " + std::string(base.empty() ? "base" : "head");
    return r;
  }
  r.base_median = median_of(base);
  r.head_median = median_of(head);
  const double scale = r.base_median != 0 ? std::abs(r.base_median) : 1;
  const double t = o.min_effect;
  // Worse means slower for a time, lower for a bandwidth: `sign` turns a shift into "worse".
  const double sign = higher_is_better(metric) ? -1 : 1;

  const bool enough = base.size() >= o.min_samples_for_rank_test &&
                      head.size() >= o.min_samples_for_rank_test;
  if (enough) {
    const RankTest test = rank_test(base, head, o.confidence);
    r.method = "rank";
    r.p_value = test.p_value;
    r.relative_change = test.shift / scale;
    r.relative_low = test.shift_low / scale;
    r.relative_high = test.shift_high / scale;
    const bool significant = r.relative_low > 0 || r.relative_high < 0;
    const std::string interval = "shift " + pct(r.relative_change) + ", " +
                                 fmt(100 * o.confidence, 3) + "% interval [" +
                                 pct(r.relative_low) + ", " + pct(r.relative_high) + "]";
    if (significant && std::abs(r.relative_change) >= t) {
      r.change = sign * r.relative_change > 0 ? Change::slower : Change::faster;
      r.why = interval + " excludes 0 and the shift is at least " + fmt(100 * t, 2) + "%";
    } else if (std::abs(r.relative_change) < t && r.relative_low > -t && r.relative_high < t) {
      r.change = Change::same;
      r.why = interval + " lies within +-" + fmt(100 * t, 2) + "%";
    } else {
      r.change = Change::ambiguous;
      r.why = interval + (significant ? " is significant but straddles the " + fmt(100 * t, 2) +
                                            "% threshold"
                                      : " is too wide to tell: the samples overlap");
    }
    return r;
  }

  // Range rule for few samples: a change counts only when the ranges do not touch.
  r.method = "range";
  const auto [bmin, bmax] = std::minmax_element(base.begin(), base.end());
  const auto [hmin, hmax] = std::minmax_element(head.begin(), head.end());
  r.relative_change = (r.head_median - r.base_median) / scale;
  r.relative_low = (*hmin - *bmax) / scale;
  r.relative_high = (*hmax - *bmin) / scale;
  const std::string shift = "median shift " + pct(r.relative_change) + " (" +
                            std::to_string(base.size()) + " vs " + std::to_string(head.size()) +
                            " samples: range rule)";
  if (std::abs(r.relative_change) < t) {
    r.change = Change::same;
    r.why = shift + " is below " + fmt(100 * t, 2) + "%";
  } else if (*hmin > *bmax || *hmax < *bmin) {
    r.change = sign * r.relative_change > 0 ? Change::slower : Change::faster;
    r.why = shift + ", the [min, max] ranges are disjoint";
  } else {
    r.change = Change::ambiguous;
    r.why = shift + ", but the [min, max] ranges overlap";
  }
  return r;
}

std::vector<double> per_rank_series(const CaseResult& c, ComparedMetric metric) {
  const auto ranks = c.evidence.find("per_rank");
  if (ranks == c.evidence.end() || !ranks->is_array()) return {};
  const char* name = metric == ComparedMetric::gpu_time    ? "step_us"
                     : metric == ComparedMetric::host_time ? "host_enqueue_us"
                     : metric == ComparedMetric::gbps      ? "exchange_gbps"
                                                           : "share_of_ceiling";
  // share_of_ceiling is a fraction of the link's ceiling; the metric is in percent.
  const double scale = metric == ComparedMetric::pct_of_ceiling ? 100.0 : 1.0;
  std::vector<double> out;
  for (const nlohmann::json& r : *ranks) {
    if (!r.is_object()) continue;
    const auto v = r.find(name);
    if (v != r.end() && v->is_number() && std::isfinite(v->get<double>()) && v->get<double>() > 0)
      out.push_back(scale * v->get<double>());
  }
  return out;
}

Comparison compare_reports(const Report& base, const Report& head, const CompareOptions& options,
                           std::string base_label, std::string head_label) {
  options.validate();
  Comparison out;
  out.options = options;
  out.base = &base;
  out.head = &head;
  out.base_label = std::move(base_label);
  out.head_label = std::move(head_label);
  out.environment = environment_differences(base, head);

  // Cases match by their full key, shape fingerprint included; a report from before
  // fingerprints has none, and then both sides match by shape name, with a warning.
  const bool by_name = lacks_fingerprints(base) || lacks_fingerprints(head);
  auto key_of = [&](const CaseResult& c) { return c.key(!by_name); };
  if (by_name)
    out.warnings.push_back(
        std::string(lacks_fingerprints(base) ? "base" : "head") +
        " has cases without shape fingerprints (written before moebench recorded them): cases "
        "are matched by shape name alone, so a shape whose dimensions changed under its name "
        "compares as the same case (see the shape dimension warnings)");
  std::map<std::string, const CaseResult*> base_by_key;
  for (const CaseResult& c : base.cases) {
    if (!base_by_key.emplace(key_of(c), &c).second)
      out.warnings.push_back("base has case " + key_of(c) + " twice; the first one is compared");
  }
  std::map<std::string, const CaseResult*> head_by_key;
  for (const CaseResult& c : head.cases) {
    if (!head_by_key.emplace(key_of(c), &c).second) {
      out.warnings.push_back("head has case " + key_of(c) + " twice; the first one is compared");
      continue;
    }
    auto b = base_by_key.find(key_of(c));
    if (b == base_by_key.end()) {
      out.only_in_head.push_back(key_of(c));
      continue;
    }
    CaseComparison cc{key_of(c), b->second, &c, {}};
    if (b->second->verdict != c.verdict)
      out.verdict_changes.push_back({key_of(c), b->second->verdict, c.verdict, c.reason});
    for (const auto& [name, hm] : c.measurements) {
      if (!b->second->measurements.contains(name)) continue;
      const Measurement& bm = b->second->measurements.at(name);
      for (const auto* m : {&bm, &hm})
        if (const std::string note = m->throttling_note(); !note.empty())
          out.warnings.push_back(std::string(m == &bm ? "base" : "head") + " case " + key_of(c) +
                                 " [" + name + "]: " + note);
      const bool host = std::find(options.metrics.begin(), options.metrics.end(),
                                  ComparedMetric::host_time) != options.metrics.end();
      if (host && bm.host_time_includes_cupti() != hm.host_time_includes_cupti())
        out.warnings.push_back(
            "case " + key_of(c) + " [" + name + "]: host enqueue time of " +
            (bm.host_time_includes_cupti() ? "base" : "head") +
            " was measured with CUPTI recording (a report from before the host pass), of " +
            (bm.host_time_includes_cupti() ? "head" : "base") +
            " without: the host comparison mixes two methods");
      for (ComparedMetric metric : options.metrics) {
        std::vector<double> bs = metric_series(*b->second, name, metric);
        std::vector<double> hs = metric_series(c, name, metric);
        if (bs.empty() && hs.empty()) continue;  // not applicable (no GB/s for this case)
        MetricComparison mc = compare_series(bs, hs, metric, options);
        mc.measurement = name;
        cc.metrics.push_back(std::move(mc));
      }
    }
    if (cc.metrics.empty() && b->second->measurements.empty() && c.measurements.empty())
      for (ComparedMetric metric : options.metrics) {
        std::vector<double> bs = per_rank_series(*b->second, metric);
        std::vector<double> hs = per_rank_series(c, metric);
        if (bs.empty() && hs.empty()) continue;
        MetricComparison mc = compare_series(bs, hs, metric, options);
        mc.measurement = "per_rank";
        mc.why += " (one sample a rank: its median)";
        cc.metrics.push_back(std::move(mc));
      }
    out.cases.push_back(std::move(cc));
  }
  for (const CaseResult& c : base.cases)
    if (!head_by_key.contains(key_of(c)) &&
        std::find(out.only_in_base.begin(), out.only_in_base.end(), key_of(c)) ==
            out.only_in_base.end())
      out.only_in_base.push_back(key_of(c));
  if (out.cases.empty())
    throw UsageError("no case is in both reports: " + out.base_label + " has " +
                     probe_summary(base) + "; " + out.head_label + " has " +
                     probe_summary(head) + " (is the base the right report?)");
  if (const std::string same = same_source(base, head, out.base_label, out.head_label);
      !same.empty())
    out.warnings.insert(out.warnings.begin(), same);
  // Verdicts that got worse first, then the other changes, each in head order.
  std::stable_sort(out.verdict_changes.begin(), out.verdict_changes.end(),
                   [](const VerdictChange& a, const VerdictChange& b) {
                     return a.worse() > b.worse();
                   });
  return out;
}

std::string signed_percent(double fraction) { return pct(fraction); }

std::vector<ComparisonRow> rows_by_importance(const Comparison& c) {
  std::vector<ComparisonRow> rows;
  for (const CaseComparison& cc : c.cases)
    for (const MetricComparison& m : cc.metrics) rows.push_back({&cc, &m});
  auto rank = [](Change ch) {
    switch (ch) {
      case Change::slower: return 0;
      case Change::faster: return 1;
      case Change::ambiguous: return 2;
      case Change::same: return 3;
    }
    return 3;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const ComparisonRow& a, const ComparisonRow& b) {
    return rank(a.metric->change) < rank(b.metric->change);
  });
  return rows;
}

json to_json(const Comparison& c) {
  json cases = json::array();
  for (const CaseComparison& cc : c.cases) {
    json metrics = json::array();
    for (const MetricComparison& m : cc.metrics)
      metrics.push_back({{"measurement", m.measurement},
                         {"metric", to_string(m.metric)},
                         {"change", to_string(m.change)},
                         {"base_samples", m.base_samples},
                         {"head_samples", m.head_samples},
                         {"base_median", m.base_median},
                         {"head_median", m.head_median},
                         {"relative_change", m.relative_change},
                         {"relative_interval", {m.relative_low, m.relative_high}},
                         {"p_value", m.p_value},
                         {"method", m.method},
                         {"why", m.why}});
    cases.push_back({{"key", cc.key},
                     {"base_verdict", to_string(cc.base->verdict)},
                     {"head_verdict", to_string(cc.head->verdict)},
                     {"metrics", metrics}});
  }
  json verdicts = json::array();
  for (const VerdictChange& v : c.verdict_changes)
    verdicts.push_back({{"key", v.key},
                        {"base", to_string(v.base)},
                        {"head", to_string(v.head)},
                        {"worse", v.worse()},
                        {"head_reason", v.head_reason}});
  json env = json::array();
  for (const EnvironmentDifference& d : c.environment)
    env.push_back({{"field", d.field}, {"base", d.base}, {"head", d.head},
                   {"expected", d.expected}});
  std::vector<std::string> metric_names;
  for (ComparedMetric m : c.options.metrics) metric_names.push_back(to_string(m));
  return json{{"schema", "moebench.comparison"},
              {"schema_version", 1},
              {"base", c.base_label},
              {"head", c.head_label},
              {"options", {{"metrics", metric_names},
                           {"threshold", c.options.min_effect},
                           {"confidence", c.options.confidence},
                           {"min_samples_for_rank_test", c.options.min_samples_for_rank_test},
                           {"allow_missing", c.options.allow_missing}}},
              {"regressed", c.regressed()},
              {"counts", {{"FASTER", c.count(Change::faster)},
                          {"SLOWER", c.count(Change::slower)},
                          {"SAME", c.count(Change::same)},
                          {"AMBIGUOUS", c.count(Change::ambiguous)},
                          {"MISSING", c.only_in_base.size()}}},
              {"environment_differences", env},
              {"warnings", c.warnings},
              {"verdict_changes", verdicts},
              {"cases", cases},
              {"only_in_base", c.only_in_base},
              {"only_in_head", c.only_in_head}};
}

}  // namespace moe::report
