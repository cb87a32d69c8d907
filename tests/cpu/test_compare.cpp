// `moebench compare`: the decision rule on series and on recorded reports (tests/data/reports,
// written by tests/data/generate_reports.py), exit codes, and every malformed input.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/errors.hpp"
#include "support/cli_runner.hpp"
#include "reports/case_summary.hpp"
#include "reports/compare.hpp"
#include "reports/rank_test.hpp"
#include "reports/table.hpp"

using namespace moe::report;
using moe::test::data_file;
using moe::test::moebench;

namespace {

std::vector<double> noisy(double center, double rsd, std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0, rsd);
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(center * (1 + d(rng)));
  return v;
}

std::string report(const std::string& name) { return data_file("reports/" + name); }

const MetricComparison& only_metric(const Comparison& c, const std::string& key_part) {
  for (const CaseComparison& cc : c.cases)
    if (cc.key.find(key_part) != std::string::npos) {
      REQUIRE(!cc.metrics.empty());
      return cc.metrics.front();
    }
  FAIL("no case matches " << key_part);
  throw 0;
}

}  // namespace

TEST_CASE("rank test: U, p and the Hodges-Lehmann interval on known data") {
  // Every head sample above every base sample: U = n*m and a tiny p.
  const std::vector<double> base{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<double> head;
  for (double x : base) head.push_back(x + 100);
  const RankTest t = rank_test(base, head, 0.99);
  CHECK(t.u == doctest::Approx(100));
  CHECK(t.p_value < 1e-3);
  CHECK(t.shift == doctest::Approx(100));
  CHECK(t.shift_low > 90);
  CHECK(t.shift_high < 110);
  // Identical series: no shift, p = 1.
  const RankTest same = rank_test(base, base, 0.99);
  CHECK(same.shift == doctest::Approx(0));
  CHECK(same.p_value == doctest::Approx(1));
  CHECK(same.shift_low < 0);
  CHECK(same.shift_high > 0);
}

TEST_CASE("pairwise difference quantiles match brute force") {
  std::vector<double> a = noisy(10, 0.1, 37, 1), b = noisy(11, 0.1, 23, 2);
  std::vector<double> diffs;
  for (double x : a)
    for (double y : b) diffs.push_back(y - x);
  std::sort(diffs.begin(), diffs.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  for (double k : {0.0, 1.0, 100.0, 425.0, 850.0, 850.0 - 1}) {
    CAPTURE(k);
    CHECK(pairwise_difference_quantile(a, b, k) == doctest::Approx(diffs[static_cast<std::size_t>(k)]));
  }
}

TEST_CASE("normal quantile") {
  CHECK(normal_quantile(0.5) == doctest::Approx(0).epsilon(1e-9));
  CHECK(normal_quantile(0.975) == doctest::Approx(1.959963985).epsilon(1e-8));
  CHECK(normal_quantile(0.995) == doctest::Approx(2.575829304).epsilon(1e-8));
  CHECK(normal_quantile(0.001) == doctest::Approx(-3.090232306).epsilon(1e-8));
}

TEST_CASE("compare_series: every decision path") {
  const CompareOptions o;
  SUBCASE("same distribution, 0.3% noise: SAME") {
    const auto r = compare_series(noisy(100, 0.003, 30, 1), noisy(100, 0.003, 30, 2),
                                  ComparedMetric::gpu_time, o);
    CHECK(r.change == Change::same);
    CHECK(r.method == "rank");
  }
  SUBCASE("5% slower GPU time: SLOWER") {
    const auto r = compare_series(noisy(100, 0.003, 30, 1), noisy(105, 0.003, 30, 2),
                                  ComparedMetric::gpu_time, o);
    CHECK(r.change == Change::slower);
    CHECK(r.relative_change == doctest::Approx(0.05).epsilon(0.1));
  }
  SUBCASE("5% faster: FASTER") {
    const auto r = compare_series(noisy(100, 0.003, 30, 1), noisy(95, 0.003, 30, 2),
                                  ComparedMetric::gpu_time, o);
    CHECK(r.change == Change::faster);
  }
  SUBCASE("GB/s falling is SLOWER: higher is better") {
    const auto r = compare_series(noisy(1000, 0.003, 30, 1), noisy(950, 0.003, 30, 2),
                                  ComparedMetric::gbps, o);
    CHECK(r.change == Change::slower);
  }
  SUBCASE("noisy overlapping samples: AMBIGUOUS") {
    const auto r = compare_series(noisy(100, 0.08, 12, 1), noisy(101, 0.08, 12, 2),
                                  ComparedMetric::gpu_time, o);
    CHECK(r.change == Change::ambiguous);
  }
  SUBCASE("a real but tiny change (1%) is SAME, not a regression") {
    const auto r = compare_series(noisy(100, 0.001, 40, 1), noisy(101, 0.001, 40, 2),
                                  ComparedMetric::gpu_time, o);
    CHECK(r.p_value < 0.01);
    CHECK(r.change == Change::same);
  }
  SUBCASE("few samples: range rule") {
    const std::vector<double> base{100, 100.2, 99.9};
    CHECK(compare_series(base, {110, 110.3, 109.8}, ComparedMetric::gpu_time, o).change ==
          Change::slower);
    CHECK(compare_series(base, {100.1, 100.4, 99.8}, ComparedMetric::gpu_time, o).change ==
          Change::same);
    const auto overlap = compare_series(base, {96, 105, 120}, ComparedMetric::gpu_time, o);
    CHECK(overlap.method == "range");
    CHECK(overlap.change == Change::ambiguous);
  }
  SUBCASE("no samples on one side: AMBIGUOUS with the reason") {
    const auto r = compare_series({}, {1, 2, 3}, ComparedMetric::gpu_time, o);
    CHECK(r.change == Change::ambiguous);
    CHECK(r.why.find("base") != std::string::npos);
  }
  SUBCASE("the threshold option moves the line") {
    CompareOptions loose;
    loose.min_effect = 0.10;
    const auto r = compare_series(noisy(100, 0.003, 30, 1), noisy(105, 0.003, 30, 2),
                                  ComparedMetric::gpu_time, loose);
    CHECK(r.change == Change::same);
  }
}

TEST_CASE("recorded reports: two runs of the same build compare SAME everywhere") {
  const Report base = load_report(report("h200-base.json"));
  const Report head = load_report(report("h200-same-build.json"));
  CompareOptions o;
  o.metrics = {ComparedMetric::gpu_time, ComparedMetric::host_time, ComparedMetric::gbps};
  const Comparison c = compare_reports(base, head, o);
  CHECK(c.cases.size() == base.cases.size());
  CHECK(c.count(Change::slower) == 0);
  CHECK(c.count(Change::faster) == 0);
  for (const CaseComparison& cc : c.cases)
    for (const MetricComparison& m : cc.metrics) {
      CAPTURE(cc.key);
      CAPTURE(to_string(m.metric));
      // GPU time and GB/s (0.3% noise) are shown to be the same; host enqueue time (3% noise
      // over 24 samples) cannot rule out a 2% change and may say AMBIGUOUS, never a change.
      if (m.metric != ComparedMetric::host_time) CHECK(m.change == Change::same);
    }
  CHECK_FALSE(c.regressed());
  for (const EnvironmentDifference& d : c.environment) CHECK(d.expected);
}

TEST_CASE("host enqueue times of two methods (before and after the host pass) are warned about") {
  const Report base = load_report(report("h200-base.json"));  // from before the host pass
  Report head = base;
  for (CaseResult& c : head.cases)
    for (auto& [name, m] : c.measurements) {
      m.host_time_with_cupti_us = m.host_time_us;  // what the main loop saw, CUPTI on
      for (double& t : m.host_time_us) t *= 0.5;   // the host pass, CUPTI off
    }
  auto mixed_warnings = [](const Comparison& c) {
    std::size_t n = 0;
    for (const std::string& w : c.warnings)
      n += w.find("host enqueue time of base was measured with CUPTI recording") !=
           std::string::npos;
    return n;
  };
  CompareOptions host;
  host.metrics = {ComparedMetric::gpu_time, ComparedMetric::host_time};
  const Comparison with_host = compare_reports(base, head, host);
  CHECK(mixed_warnings(with_host) == base.cases.size());
  // GPU time alone is the same method on both sides: no warning, and still SAME.
  const Comparison gpu_only = compare_reports(base, head, {});
  CHECK(mixed_warnings(gpu_only) == 0);
  CHECK(gpu_only.count(Change::same) == base.cases.size());
  // Two reports after the host pass: one method, no warning.
  CHECK(mixed_warnings(compare_reports(head, head, host)) == 0);
}

TEST_CASE("recorded reports: a planted 5% slowdown is SLOWER and only that case") {
  const Report base = load_report(report("h200-base.json"));
  const Report head = load_report(report("h200-slower-5pct.json"));
  const Comparison c = compare_reports(base, head, {});
  CHECK(c.count(Change::slower) == 1);
  CHECK(c.count(Change::faster) == 0);
  CHECK(only_metric(c, "deepseek-v2-lite/m=8/format=bf16").change == Change::slower);
  CHECK(c.regressed());
  // Listed first by every renderer.
  CHECK(rows_by_importance(c).front().metric->change == Change::slower);
}

TEST_CASE("recorded reports: a planted 5% speedup is FASTER and no regression") {
  const Comparison c = compare_reports(load_report(report("h200-base.json")),
                                       load_report(report("h200-faster-5pct.json")), {});
  CHECK(c.count(Change::faster) == 1);
  CHECK(only_metric(c, "qwen3-30b-a3b/m=4/format=int4").change == Change::faster);
  CHECK_FALSE(c.regressed());
}

TEST_CASE("recorded reports: noisy machines give AMBIGUOUS, not SLOWER") {
  const Comparison c = compare_reports(load_report(report("noisy-base.json")),
                                       load_report(report("noisy-head.json")), {});
  CHECK(c.count(Change::ambiguous) == c.cases.size());
  CHECK_FALSE(c.regressed());
}

TEST_CASE("recorded reports: PASS to FAIL is a regression, listed first") {
  const Comparison c = compare_reports(load_report(report("h200-base.json")),
                                       load_report(report("h200-verdict-fail.json")), {});
  REQUIRE(c.verdict_changes.size() == 1);
  CHECK(c.verdict_changes[0].base == Verdict::pass);
  CHECK(c.verdict_changes[0].head == Verdict::fail);
  CHECK(c.verdict_changes[0].worse());
  CHECK(c.regressed());
}

TEST_CASE("recorded reports: a base case missing from the head is MISSING and fails") {
  const Report base = load_report(report("h200-base.json"));
  const Report head = load_report(report("h200-cases-changed.json"));
  const Comparison c = compare_reports(base, head, {});
  CHECK(c.only_in_base.size() == 2);
  REQUIRE(c.only_in_head.size() == 1);
  CHECK(c.only_in_head[0].find("m=64") != std::string::npos);
  CHECK(c.count(Change::slower) == 0);
  CHECK(c.regressed());  // the head did not run two of the base's cases
  CompareOptions allow;
  allow.allow_missing = true;
  CHECK_FALSE(compare_reports(base, head, allow).regressed());
  // A case only in the head is new, not a failure.
  CHECK_FALSE(compare_reports(head, base, allow).regressed());
}

TEST_CASE("compare: no case in common is an input error naming both reports' probes") {
  const Report bandwidth = load_report(report("h200-base.json"));
  const Report copy = load_report(report("recorded-h200-copy.json"));
  Report other = bandwidth;
  std::erase_if(other.cases, [](const CaseResult& c) { return c.probe == "copy"; });
  for (CaseResult& c : other.cases) c.probe = "capture-replay";
  CHECK_THROWS_WITH_AS(compare_reports(bandwidth, other, {}, "b.json", "h.json"),
                       doctest::Contains("no case is in both reports: b.json has copy (3 cases), "
                                         "bandwidth (24 cases); h.json has capture-replay (24 cases)"),
                       moe::UsageError);
  const auto dir = moe::test::scratch_dir("compare-disjoint");
  const std::string path = (dir / "capture-replay.json").string();
  std::ofstream(path) << nlohmann::json(other).dump();
  const auto r = moebench("compare", report("h200-base.json"), path);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no case is in both reports") != std::string::npos);
  CHECK(r.err.find("bandwidth (24 cases)") != std::string::npos);
  CHECK(r.err.find("capture-replay (24 cases)") != std::string::npos);
  CHECK(r.out.find("no regression") == std::string::npos);
  (void)copy;
}

TEST_CASE("compare: the same file twice, or two copies of one run, is a warning") {
  const auto same = moebench("compare", report("h200-base.json"), report("h200-base.json"));
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("warning: base and head are the same file") != std::string::npos);
  const Report base = load_report(report("h200-base.json"));
  const Comparison copies = compare_reports(base, base, {}, "a.json", "b.json");
  REQUIRE(!copies.warnings.empty());
  CHECK(copies.warnings.front().find("copies of one run") != std::string::npos);
  const Comparison two_runs = compare_reports(base, load_report(report("h200-same-build.json")), {});
  for (const std::string& w : two_runs.warnings) CHECK(w.find("base and head are") == std::string::npos);
}

TEST_CASE("compare --filter selects cases by key; a bad or empty match is exit 2") {
  // The planted slowdown is deepseek-v2-lite m=8 bf16: filtered out, no regression.
  const auto qwen = moebench("compare", report("h200-base.json"), report("h200-slower-5pct.json"),
                             "--filter", "shape=qwen3");
  CHECK(qwen.exit_code == 0);
  CHECK(qwen.out.find("deepseek") == std::string::npos);
  CHECK(qwen.out.find("qwen3-30b-a3b") != std::string::npos);
  const auto ds = moebench("compare", report("h200-base.json"), report("h200-slower-5pct.json"),
                           "--filter", "deepseek-v2-lite/m=8/", "--format", "json");
  CHECK(ds.exit_code == 1);
  const auto j = nlohmann::json::parse(ds.out);
  CHECK(j.at("cases").size() == 2);  // bf16 and int4
  const auto bad = moebench("compare", report("h200-base.json"), report("h200-base.json"),
                            "--filter", "(");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--filter '(' is not a valid regular expression") != std::string::npos);
  const auto none = moebench("compare", report("h200-base.json"), report("h200-base.json"),
                             "--filter", "mixtral");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("--filter 'mixtral' matches no case of") != std::string::npos);
}

TEST_CASE("compare: MISSING in every output, and --allow-missing") {
  const auto table = moebench("compare", report("h200-base.json"), report("h200-cases-changed.json"));
  CHECK(table.exit_code == 1);
  CHECK(table.out.find("MISSING from head (2") != std::string::npos);
  CHECK(table.out.find("REGRESSION") != std::string::npos);
  const auto allowed = moebench("compare", report("h200-base.json"),
                                report("h200-cases-changed.json"), "--allow-missing");
  CHECK(allowed.exit_code == 0);
  CHECK(allowed.out.find("allowed by --allow-missing") != std::string::npos);
  const auto md = moebench("compare", report("h200-base.json"), report("h200-cases-changed.json"),
                           "--format", "markdown");
  CHECK(md.exit_code == 1);
  CHECK(md.out.find("MISSING from the head") != std::string::npos);
  const auto html = moebench("compare", report("h200-base.json"),
                             report("h200-cases-changed.json"), "--format", "html");
  CHECK(html.exit_code == 1);
  CHECK(html.out.find("<html") != std::string::npos);
  const auto json = moebench("compare", report("h200-base.json"),
                             report("h200-cases-changed.json"), "--format", "json");
  CHECK(nlohmann::json::parse(json.out).at("counts").at("MISSING") == 2);
}

TEST_CASE("compare: read ceilings more than 1% apart and one shape name with two sizes warn") {
  const Report base = load_report(report("h200-base.json"));
  auto differences = [](const Comparison& c, const std::string& part) {
    std::vector<EnvironmentDifference> out;
    for (const EnvironmentDifference& d : c.environment)
      if (d.field.find(part) != std::string::npos) out.push_back(d);
    return out;
  };
  auto with_ceiling = [&](double factor) {
    Report r = base;
    for (CaseResult& c : r.cases)
      if (auto it = c.metrics.find("read_ceiling_gbps"); it != c.metrics.end())
        it->second.value *= factor;
    return r;
  };
  REQUIRE(read_ceiling_gbps(base).value_or(0) > 4000);
  const Report lower = with_ceiling(0.97), close = with_ceiling(0.995);
  const auto far = differences(compare_reports(base, lower, {}), "read ceiling");
  REQUIRE(far.size() == 1);
  CHECK_FALSE(far[0].expected);
  CHECK(far[0].head.find("-3.0%") != std::string::npos);
  CHECK(differences(compare_reports(base, close, {}), "read ceiling").empty());

  Report wide = base;
  Report narrow = base;
  const nlohmann::json shape{{"name", "deepseek-v2-lite"}, {"hidden", 2048}, {"moe_inter", 1408},
                             {"experts", 64}, {"top_k", 6}, {"shared_experts", 2},
                             {"description", "one"}};
  nlohmann::json other = shape;
  other["hidden"] = 4096;
  other["experts"] = 128;
  other["description"] = "two";
  narrow.options["shapes"] = {shape};
  wide.options["shapes"] = {other};
  const auto dims = differences(compare_reports(narrow, wide, {}), "dimensions of shape");
  REQUIRE(dims.size() == 1);
  CHECK(dims[0].field == "dimensions of shape deepseek-v2-lite");
  CHECK(dims[0].base == "experts 64, hidden 2048");
  CHECK(dims[0].head == "experts 128, hidden 4096");
  // A different description alone is no difference in what ran.
  nlohmann::json described = shape;
  described["description"] = "renamed";
  wide.options["shapes"] = {described};
  CHECK(differences(compare_reports(narrow, wide, {}), "dimensions").empty());
}

TEST_CASE("compare --metric pct: percent of each run's read ceiling, for two GPUs") {
  // The head GPU takes twice as long at half the ceiling: time is SLOWER, the share of the
  // ceiling it reaches is the SAME.
  auto run = [](double gpu_us, double pct) {
    CaseResult c;
    c.probe = "bandwidth";
    c.name = "step";
    c.shape = "tiny";
    c.m = 1;
    Measurement m;
    m.gpu_time_us = noisy(gpu_us, 0.002, 30, gpu_us > 15 ? 2 : 1);
    c.measurements["main"] = m;
    c.metrics["gbps"] = {pct * 45.5, "GB/s"};
    c.metrics["pct_of_read_ceiling"] = {pct, "%"};
    Report r;
    r.cases = {c};
    return r;
  };
  const Report h200 = run(10, 80), other = run(20, 80);
  CompareOptions o;
  o.metrics = compared_metrics_from_strings({"gpu", "pct"});
  const Comparison c = compare_reports(h200, other, o);
  REQUIRE(c.cases.size() == 1);
  REQUIRE(c.cases[0].metrics.size() == 2);
  CHECK(c.cases[0].metrics[0].change == Change::slower);
  CHECK(c.cases[0].metrics[1].metric == ComparedMetric::pct_of_ceiling);
  CHECK(c.cases[0].metrics[1].change == Change::same);
  CHECK(c.cases[0].metrics[1].base_median == doctest::Approx(80).epsilon(0.01));
  const Comparison lower = compare_reports(h200, run(10, 70), o);
  CHECK(lower.cases[0].metrics[1].change == Change::slower);  // a lower share is worse
  CHECK_THROWS_WITH_AS(compared_metrics_from_strings({"gpu", "gpu"}),
                       doctest::Contains("--metric 'gpu' is given twice"), moe::UsageError);
}

TEST_CASE("compare: p-values print with significant digits") {
  CHECK(format_p_value(0.0043) == "0.0043");
  CHECK(format_p_value(0.012) == "0.012");
  CHECK(format_p_value(0.35) == "0.35");
  CHECK(format_p_value(1) == "1");
  CHECK(format_p_value(2.1e-7) == "2.1e-07");
  const auto r = moebench("compare", report("h200-base.json"), report("h200-same-build.json"));
  CHECK(r.out.find(" 0.0 ") == std::string::npos);
}

TEST_CASE("recorded reports: another GPU and driver are warnings") {
  const Comparison c = compare_reports(load_report(report("h200-base.json")),
                                       load_report(report("a100-other-gpu.json")), {});
  std::set<std::string> fields;
  for (const EnvironmentDifference& d : c.environment)
    if (!d.expected) fields.insert(d.field);
  CHECK(fields.contains("GPU"));
  CHECK(fields.contains("GPU UUID"));
  CHECK(fields.contains("CUDA driver"));
  CHECK(fields.contains("compute capability"));
}

TEST_CASE("recorded reports: three samples a case use the range rule") {
  const Comparison c = compare_reports(load_report(report("few-samples-base.json")),
                                       load_report(report("few-samples-head.json")), {});
  const MetricComparison& m = only_metric(c, "deepseek-v2-lite/m=1/format=bf16");
  CHECK(m.method == "range");
  CHECK(m.change == Change::slower);
}

// ---- the CLI --------------------------------------------------------------------------------

TEST_CASE("moebench compare: exit codes on recorded reports") {
  const auto same = moebench("compare", report("h200-base.json"), report("h200-same-build.json"));
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("no regression") != std::string::npos);

  const auto slower = moebench("compare", report("h200-base.json"), report("h200-slower-5pct.json"));
  CHECK(slower.exit_code == 1);
  CHECK(slower.out.find("SLOWER") != std::string::npos);

  const auto faster = moebench("compare", report("h200-base.json"), report("h200-faster-5pct.json"));
  CHECK(faster.exit_code == 0);
  CHECK(faster.out.find("FASTER") != std::string::npos);

  const auto noisy = moebench("compare", report("noisy-base.json"), report("noisy-head.json"));
  CHECK(noisy.exit_code == 0);
  CHECK(noisy.out.find("AMBIGUOUS") != std::string::npos);

  const auto verdict = moebench("compare", report("h200-base.json"), report("h200-verdict-fail.json"));
  CHECK(verdict.exit_code == 1);
  // Verdict changes come before the metric table.
  const auto at_verdict = verdict.out.find("PASS  FAIL");
  REQUIRE(at_verdict != std::string::npos);
  CHECK(at_verdict < verdict.out.find("interval"));

  const auto gpu = moebench("compare", report("h200-base.json"), report("a100-other-gpu.json"));
  CHECK(gpu.out.find("warning") != std::string::npos);
  CHECK(gpu.out.find("NVIDIA A100-SXM4-80GB") != std::string::npos);
}

TEST_CASE("moebench compare: --metric host,gbps and --threshold") {
  const auto r = moebench("compare", report("h200-base.json"), report("h200-slower-5pct.json"),
                          "--metric", "gpu,host,gbps");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find(" host ") != std::string::npos);
  CHECK(r.out.find(" gbps ") != std::string::npos);
  const auto loose = moebench("compare", report("h200-base.json"),
                              report("h200-slower-5pct.json"), "--threshold", "10");
  CHECK(loose.exit_code == 0);
}

TEST_CASE("moebench compare: json and markdown outputs agree with the exit code") {
  const auto dir = moe::test::scratch_dir("compare-out");
  const auto md = (dir / "summary.md").string();
  const auto r = moebench("compare", report("h200-base.json"), report("h200-slower-5pct.json"),
                          "--format", "json", "--markdown", md);
  CHECK(r.exit_code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("regressed") == true);
  CHECK(j.at("counts").at("SLOWER") == 1);
  const std::string text = moe::test::read_text(md);
  CHECK(text.find("## moebench compare") != std::string::npos);
  CHECK(text.find("SLOWER") != std::string::npos);
}

TEST_CASE("moebench compare: every malformed input exits 2 naming the problem") {
  const auto dir = moe::test::scratch_dir("compare-bad");
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir / name) << content;
    return (dir / name).string();
  };
  const std::string good = report("h200-base.json");
  nlohmann::json newer = nlohmann::json::parse(moe::test::read_text(good));
  newer["schema_version"] = 99;
  nlohmann::json missing = nlohmann::json::parse(moe::test::read_text(good));
  missing["cases"][0].erase("verdict");
  nlohmann::json bad_verdict = nlohmann::json::parse(moe::test::read_text(good));
  bad_verdict["cases"][0]["verdict"] = "MAYBE";
  nlohmann::json wrong_type = nlohmann::json::parse(moe::test::read_text(good));
  wrong_type["cases"][0]["measurements"]["main"]["raw"]["gpu_time_us"] = "fast";

  struct Bad {
    std::string file, expect;
  };
  const Bad cases[] = {
      {(dir / "does-not-exist.json").string(), "cannot be opened"},
      {write("truncated.json", "{\"schema\": \"moebench.report\", "), "not valid JSON"},
      {write("other.json", "{\"schema\": \"something.else\"}"), "not a moebench report"},
      {write("array.json", "[1, 2, 3]"), "not a moebench report"},
      {write("newer.json", newer.dump()), "schema version 99"},
      {write("missing.json", missing.dump()), "verdict"},
      {write("bad-verdict.json", bad_verdict.dump()), "MAYBE"},
      {write("wrong-type.json", wrong_type.dump()), "mistyped"},
  };
  for (const Bad& b : cases) {
    CAPTURE(b.file);
    for (bool as_head : {false, true}) {
      const auto r = as_head ? moebench("compare", good, b.file) : moebench("compare", b.file, good);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(b.expect) != std::string::npos);
      CHECK(r.err.find(b.file) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
    }
  }
  const auto metric = moebench("compare", good, good, "--metric", "latency");
  CHECK(metric.exit_code == 2);
  CHECK(metric.err.find("valid: gpu, host, gbps") != std::string::npos);
  const auto threshold = moebench("compare", good, good, "--threshold", "0");
  CHECK(threshold.exit_code == 2);
  CHECK(threshold.err.find("--threshold") != std::string::npos);
  const auto format = moebench("compare", good, good, "--format", "pdf");
  CHECK(format.exit_code == 2);
  CHECK(format.err.find("valid: table, markdown, html, json") != std::string::npos);
  const auto one = moebench("compare", good);
  CHECK(one.exit_code == 2);
}

TEST_CASE("recorded on an H200: a report and its `moebench repro` rerun compare SAME on GPU time") {
  // tests/data/reports/recorded-h200-copy*.json: `moebench run copy --copy-bytes 1073741824`
  // and `moebench repro` of that report, one after the other on one H200.
  const Report base = load_report(report("recorded-h200-copy.json"));
  const Report head = load_report(report("recorded-h200-copy-repro.json"));
  CompareOptions o;
  o.metrics = {ComparedMetric::gpu_time, ComparedMetric::gbps};
  const Comparison c = compare_reports(base, head, o);
  REQUIRE(c.cases.size() == 3);
  CHECK(c.count(Change::same) == 6);
  CHECK_FALSE(c.regressed());
  CHECK(head.extra.at("repro").at("reproduced") == true);
  const auto r = moebench("compare", report("recorded-h200-copy.json"),
                          report("recorded-h200-copy-repro.json"));
  CHECK(r.exit_code == 0);
}
