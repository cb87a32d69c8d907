// `moebench noise`: the spread of per-run medians on known numbers, case matching across runs,
// and the command on recorded reports (tests/data/reports).
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "reports/noise.hpp"
#include "support/cli_runner.hpp"

using namespace moe::report;
using moe::test::data_file;
using moe::test::CliResult;

namespace {

CaseResult timed_case(const std::string& name, std::vector<double> gpu_us) {
  CaseResult c;
  c.probe = "bandwidth";
  c.name = name;
  Measurement m;
  m.gpu_time_us = std::move(gpu_us);
  c.measurements["main"] = m;
  return c;
}

Report run_of(std::vector<CaseResult> cases) {
  Report r;
  r.cases = std::move(cases);
  return r;
}

std::string report(const std::string& name) { return data_file("reports/" + name); }

}  // namespace

TEST_CASE("median spread: range and standard deviation over the mean of the medians") {
  const MedianSpread s = median_spread({99, 100, 101});
  CHECK(s.mean == doctest::Approx(100));
  CHECK(s.min == doctest::Approx(99));
  CHECK(s.max == doctest::Approx(101));
  CHECK(s.spread == doctest::Approx(0.02));  // (101 - 99) / 100
  CHECK(s.rsd == doctest::Approx(0.01));     // sample std 1 over 100

  const MedianSpread two = median_spread({40, 41});
  CHECK(two.spread == doctest::Approx(1.0 / 40.5));
  CHECK(two.rsd == doctest::Approx(0.70710678 / 40.5));

  const MedianSpread same = median_spread({83.7, 83.7, 83.7});
  CHECK(same.spread == 0);
  CHECK(same.rsd == 0);
  CHECK(median_spread({0, 0}).spread == 0);  // no division by a zero mean
}

TEST_CASE("run-to-run noise: each run's median, matched by case, against the threshold") {
  // Medians 11, 12 and 10: mean 11, spread 2/11, rsd 1/11.
  const std::vector<Report> runs{
      run_of({timed_case("a", {10, 11, 12}), timed_case("b", {100, 100, 100})}),
      run_of({timed_case("a", {11, 12, 13}), timed_case("b", {100.4, 100.5, 100.6})}),
      run_of({timed_case("a", {10, 10, 10, 13}), timed_case("only-here", {1, 2, 3})}),
  };
  const NoiseSummary s = run_to_run_noise(runs, {"r1", "r2", "r3"}, {});
  REQUIRE(s.cases.size() == 2);

  const CaseNoise& a = s.cases[0];
  CHECK(a.key == "bandwidth/a");
  CHECK(a.measurement == "main");
  CHECK(a.runs == std::vector<std::size_t>{0, 1, 2});
  CHECK(a.spread.medians == std::vector<double>{11, 12, 10});
  CHECK(a.spread.mean == doctest::Approx(11));
  CHECK(a.spread.spread == doctest::Approx(2.0 / 11));
  CHECK(a.spread.rsd == doctest::Approx(1.0 / 11));
  CHECK(a.max_run_rsd == doctest::Approx(1.5 / 10.75));  // run 3: std 1.5 over mean 10.75
  CHECK(a.noisy);

  // In two of three runs: kept, with a warning; medians 100 and 100.5, spread 0.5/100.25.
  const CaseNoise& b = s.cases[1];
  CHECK(b.runs == std::vector<std::size_t>{0, 1});
  CHECK(b.spread.spread == doctest::Approx(0.5 / 100.25));
  CHECK_FALSE(b.noisy);  // 0.499% is within 1%
  CHECK(s.noisy() == 1);

  auto warned = [&](const std::string& part) {
    for (const std::string& w : s.warnings)
      if (w.find(part) != std::string::npos) return true;
    return false;
  };
  CHECK(warned("bandwidth/b [main, gpu] is in 2 of 3 runs"));
  CHECK(warned("bandwidth/only-here [main, gpu] is in only one run (r3): left out"));

  NoiseOptions strict;
  strict.max_spread = 0.004;
  CHECK(run_to_run_noise(runs, {"r1", "r2", "r3"}, strict).noisy() == 2);
}

TEST_CASE("run-to-run noise: host and GB/s series, bad options and too few runs") {
  CaseResult c = timed_case("a", {10, 10, 10});
  c.measurements["main"].host_time_us = {4, 5, 6};
  c.metrics["gbps"] = {1000, "GB/s"};
  CaseResult d = c;
  d.measurements["main"].host_time_us = {5, 6, 7};
  NoiseOptions o;
  o.metrics = {ComparedMetric::host_time, ComparedMetric::gbps};
  const NoiseSummary s = run_to_run_noise({run_of({c}), run_of({d})}, {"r1", "r2"}, o);
  REQUIRE(s.cases.size() == 2);
  CHECK(s.cases[0].metric == ComparedMetric::host_time);
  CHECK(s.cases[0].spread.medians == std::vector<double>{5, 6});
  CHECK(s.cases[1].metric == ComparedMetric::gbps);
  CHECK(s.cases[1].spread.spread == 0);

  CHECK_THROWS_WITH_AS(run_to_run_noise({run_of({c})}, {"r1"}, {}),
                       doctest::Contains("at least two reports"), moe::UsageError);
  NoiseOptions bad;
  bad.max_spread = 0;
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("--threshold 0 is out of range"),
                       moe::UsageError);
}

TEST_CASE("moebench noise: recorded reports, table and JSON") {
  const auto table = moe::test::moebench("noise", report("h200-base.json"),
                                          report("h200-same-build.json"),
                                          report("h200-slower-5pct.json"));
  CHECK(table.exit_code == 0);  // NOISY cases are the finding, not a failure
  CHECK(table.out.find("median per run") != std::string::npos);
  // The planted 5% slowdown of one case in the third run is the only NOISY row.
  CHECK(table.out.find("26 of 27 within 1.00% over 3 runs") != std::string::npos);
  const auto noisy_row = table.out.find("NOISY");
  REQUIRE(noisy_row != std::string::npos);
  CHECK(table.out.rfind("deepseek-v2-lite/m=8/format=bf16", noisy_row) != std::string::npos);

  const auto dir = moe::test::scratch_dir("noise-out");
  const auto out = (dir / "noise.json").string();
  const auto json = moe::test::moebench("noise", report("h200-base.json"),
                                         report("h200-same-build.json"), "--format", "json",
                                         "--metric", "gpu,host", "-o", out);
  CHECK(json.exit_code == 0);
  const auto j = nlohmann::json::parse(moe::test::read_text(out));
  CHECK(j.at("reports").size() == 2);
  CHECK(j.at("metrics") == nlohmann::json{"gpu", "host"});
  CHECK(j.at("max_spread") == doctest::Approx(0.01));
  REQUIRE(!j.at("cases").empty());
  const auto& first = j.at("cases").at(0);
  for (const char* key : {"key", "measurement", "metric", "runs", "medians", "mean", "min",
                          "max", "spread", "rsd", "max_run_rsd", "noisy"})
    CHECK_MESSAGE(first.contains(key), key);
  CHECK(first.at("medians").size() == 2);
}

TEST_CASE("moebench noise --fail-noisy: exit 1 only when a case is NOISY (a CI gate)") {
  const auto noisy = moe::test::moebench("noise", report("h200-base.json"),
                                          report("h200-same-build.json"),
                                          report("h200-slower-5pct.json"), "--fail-noisy");
  CHECK(noisy.exit_code == 1);
  CHECK(noisy.out.find("NOISY") != std::string::npos);  // the table is still printed
  const auto quiet = moe::test::moebench("noise", report("h200-base.json"),
                                          report("h200-same-build.json"), "--fail-noisy");
  CHECK(quiet.out.find("NOISY") == std::string::npos);
  CHECK(quiet.exit_code == 0);
}

TEST_CASE("moebench noise: bad input exits 2 naming it") {
  const CliResult one = moe::test::moebench("noise", report("h200-base.json"));
  CHECK(one.exit_code == 2);
  CHECK(one.err.find("at least two reports") != std::string::npos);
  const CliResult threshold = moe::test::moebench(
      "noise", report("h200-base.json"), report("h200-base.json"), "--threshold", "-1");
  CHECK(threshold.exit_code == 2);
  CHECK(threshold.err.find("--threshold -1 is out of range") != std::string::npos);
  const CliResult metric = moe::test::moebench(
      "noise", report("h200-base.json"), report("h200-base.json"), "--metric", "kernel");
  CHECK(metric.exit_code == 2);
  CHECK(metric.err.find("valid: gpu, host, gbps") != std::string::npos);
  const CliResult missing =
      moe::test::moebench("noise", report("h200-base.json"), "/nonexistent.json");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("cannot be opened") != std::string::npos);
  const CliResult format = moe::test::moebench(
      "noise", report("h200-base.json"), report("h200-base.json"), "--format", "html");
  CHECK(format.exit_code == 2);
  CHECK(format.err.find("valid: table, json") != std::string::npos);
}

TEST_CASE("moebench noise: no case in two runs is exit 2 naming the probes; one file twice warns") {
  const auto dir = moe::test::scratch_dir("noise-disjoint");
  Report other = load_report(report("h200-base.json"));
  std::erase_if(other.cases, [](const CaseResult& c) { return c.probe == "copy"; });
  for (CaseResult& c : other.cases) c.probe = "capture-replay";
  const std::string path = (dir / "capture-replay.json").string();
  std::ofstream(path) << nlohmann::json(other).dump();
  const CliResult disjoint = moe::test::moebench("noise", report("h200-base.json"), path);
  CHECK(disjoint.exit_code == 2);
  CHECK(disjoint.err.find("no case is in two of the reports") != std::string::npos);
  CHECK(disjoint.err.find("bandwidth (24 cases)") != std::string::npos);
  CHECK(disjoint.err.find("capture-replay (24 cases)") != std::string::npos);
  CHECK(disjoint.out.find("0 of 0") == std::string::npos);

  const CliResult twice =
      moe::test::moebench("noise", report("h200-base.json"), report("h200-base.json"));
  CHECK(twice.exit_code == 0);
  CHECK(twice.out.find("is the same file") == std::string::npos);
  CHECK(twice.out.find("are the same file") != std::string::npos);
}

TEST_CASE("moebench noise and render --filter select cases by key") {
  const CliResult noise = moe::test::moebench(
      "noise", report("h200-base.json"), report("h200-same-build.json"),
      report("h200-slower-5pct.json"), "--filter", "shape=qwen3");
  CHECK(noise.exit_code == 0);
  CHECK(noise.out.find("12 of 12 within") != std::string::npos);
  CHECK(noise.out.find("deepseek") == std::string::npos);
  const CliResult bad = moe::test::moebench("noise", report("h200-base.json"),
                                            report("h200-same-build.json"), "--filter", "[");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("not a valid regular expression") != std::string::npos);

  const CliResult render =
      moe::test::moebench("render", report("h200-base.json"), "--filter", "^copy/");
  CHECK(render.exit_code == 0);
  CHECK(render.out.find("copy-kernel") != std::string::npos);
  CHECK(render.out.find("bandwidth") == std::string::npos);
  const CliResult none =
      moe::test::moebench("render", report("h200-base.json"), "--filter", "nothing-like-this");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("matches no case") != std::string::npos);
}
