#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/errors.hpp"
#include "reports/case_summary.hpp"
#include "reports/environment.hpp"
#include "reports/report_writer.hpp"

using namespace moe::report;
using nlohmann::json;

namespace {

CaseResult sample_case(int m) {
  CaseResult c;
  c.probe = "bandwidth";
  c.name = "forward";
  c.shape = "tiny";
  c.m = m;
  c.format = "bf16";
  c.mode = "graph";
  c.seed = 7;
  c.verdict = Verdict::pass;
  c.reason = "ok";
  c.required_evidence = {"l2_defeated"};
  c.evidence["l2_defeated"] = true;
  c.metrics["gbps"] = {1234.5, "GB/s"};
  Measurement meas;
  meas.gpu_time_us = {10.5, 10.25, 10.75};
  meas.host_time_us = {2, 2.25, 2.5, 2.75};  // the host pass: CUPTI off, its own count
  meas.host_time_with_cupti_us = {3, 3.5, 4};
  meas.kernel_time_us = {9, 9.25, 9.5};
  meas.kernel_count = {4, 4, 4};
  meas.sm_clock_mhz = {1980, 1980, 1965};
  meas.throttled = {false, true, false};
  meas.l2_mode = "cold";
  meas.stop_reason = "converged";
  meas.l2_flushes = 3;
  meas.total_gpu_time_s = 31.5e-6;
  meas.kernel_timing = true;
  meas.throttle_reasons = {"sw_power_cap"};
  c.measurements["main"] = meas;
  c.checks.push_back({"matches_reference", true, "max rel err 1e-3"});
  c.evidence = {{"experts_touched", 6}};
  c.parameters = {{"m", m}};
  return c;
}

Report sample_report() {
  Report r;
  r.tool = tool_info();
  r.invocation = {{"argv", {"moebench", "run"}}, {"complete", true}};
  r.environment = {{"gpu", {{"name", "NVIDIA H200"}}}};
  r.options = {{"seed", 7}};
  r.cases = {sample_case(1), sample_case(8)};
  return r;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("moebench-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("a report survives a JSON round trip unchanged") {
  const Report r = sample_report();
  const json first = r;
  const Report back = first.get<Report>();
  const json second = back;
  CHECK(first == second);
  CHECK(back.cases.size() == 2);
  CHECK(back.cases[1].m == 8);
  CHECK(back.cases[0].measurements.at("main").throttled_samples() == 1);
}

TEST_CASE("the report JSON carries the schema's top-level and per-case fields") {
  const json j = sample_report();
  CHECK(j.at("schema") == "moebench.report");
  CHECK(j.at("schema_version") == kSchemaVersion);
  for (const char* key : {"tool", "invocation", "environment", "options", "cases", "overall"})
    CHECK_MESSAGE(j.contains(key), key);
  for (const char* key : {"version", "git_commit", "git_dirty", "build_type",
                          "cuda_architectures", "cxx_compiler", "cuda_compiler"})
    CHECK_MESSAGE(j.at("tool").contains(key), key);
  const json& c = j.at("cases").at(0);
  CHECK(c.at("key") == "bandwidth/forward/shape=tiny/m=1/format=bf16/mode=graph");
  CHECK(c.at("verdict") == "PASS");
  const json& m = c.at("measurements").at("main");
  for (const char* key : {"gpu_time_us", "host_time_us", "kernel_time_us", "kernel_count",
                          "launch_gap_us", "raw", "samples", "stop_reason", "l2"})
    CHECK_MESSAGE(m.contains(key), key);
  for (const char* key : {"min", "p10", "median", "p90", "max", "mean", "rsd"})
    CHECK_MESSAGE(m.at("gpu_time_us").contains(key), key);
  CHECK(m.at("gpu_time_us").at("median") == doctest::Approx(10.5));
  CHECK(m.at("launch_gap_us").at("median") == doctest::Approx(1.25));
}

TEST_CASE("host enqueue time: CUPTI-free host pass and CUPTI-on main loop both round-trip") {
  const json j = sample_case(1);
  const json& m = j.at("measurements").at("main");
  CHECK(m.at("host_time_us").at("median") == doctest::Approx(2.375));
  CHECK(m.at("host_time_us").at("count") == 4);
  CHECK(m.at("host_time_with_cupti_us").at("median") == doctest::Approx(3.5));
  CHECK(m.at("raw").at("host_time_with_cupti_us") == json{3, 3.5, 4});
  const Measurement back = j.get<CaseResult>().measurements.at("main");
  CHECK(back.host_time_us == std::vector<double>{2, 2.25, 2.5, 2.75});
  CHECK(back.host_time_with_cupti_us == std::vector<double>{3, 3.5, 4});
  CHECK_FALSE(back.host_time_includes_cupti());
  // The host times that pair with gpu_time_us sample by sample are the main loop's.
  CHECK(back.main_loop_host_time_us() == back.host_time_with_cupti_us);
  CHECK(back.main_loop_host_time_us().size() == back.gpu_time_us.size());
}

TEST_CASE("host enqueue time: without kernel timing the field is absent, not empty") {
  CaseResult c = sample_case(1);
  Measurement& m = c.measurements.at("main");
  m.kernel_timing = false;
  m.kernel_time_us.clear();
  m.kernel_count.clear();
  m.host_time_with_cupti_us.clear();
  m.host_time_us = {3, 3.5, 4};
  const json j = c;
  const json& jm = j.at("measurements").at("main");
  CHECK_FALSE(jm.contains("host_time_with_cupti_us"));
  CHECK_FALSE(jm.at("raw").contains("host_time_with_cupti_us"));
  const Measurement back = j.get<CaseResult>().measurements.at("main");
  CHECK_FALSE(back.host_time_includes_cupti());
  CHECK(back.main_loop_host_time_us() == std::vector<double>{3, 3.5, 4});
  CHECK(json(back) == jm);
}

TEST_CASE("host enqueue time: a report from before the host pass still loads") {
  // Recorded reports (tests/data/reports) predate the host pass: kernel-timed, one host series.
  const Report old = load_report(std::string(MOEBENCH_TEST_DATA_DIR) + "/reports/h200-base.json");
  REQUIRE(!old.cases.empty());
  const Measurement& m = old.cases.back().measurements.at("main");
  CHECK(m.kernel_timing);
  CHECK(m.host_time_with_cupti_us.empty());
  CHECK(m.host_time_includes_cupti());  // its host_time_us was measured with CUPTI on
  CHECK(m.main_loop_host_time_us().size() == m.gpu_time_us.size());
  CHECK_FALSE(json(m).contains("host_time_with_cupti_us"));
}

TEST_CASE("verdicts: the overall verdict is the worst case, and checks decide a case") {
  Report r = sample_report();
  CHECK(r.overall() == Verdict::pass);
  r.cases[0].verdict = Verdict::inconclusive;
  CHECK(r.overall() == Verdict::inconclusive);
  r.cases[1].checks.push_back({"output_matches", false, "3 tokens differ"});
  r.cases[1].reason.clear();
  r.cases[1].conclude("");
  CHECK(r.cases[1].verdict == Verdict::fail);
  CHECK(r.cases[1].reason.find("output_matches") != std::string::npos);
  CHECK(r.overall() == Verdict::fail);
  CHECK_THROWS_AS(verdict_from_string("GREEN"), moe::UsageError);
}

TEST_CASE("the writer replaces the file whole and leaves no temporary behind") {
  const std::string path = temp_path("report.json");
  const ReportWriter writer(path);
  Report r = sample_report();
  writer.write(r);
  r.cases.push_back(sample_case(64));
  writer.write(r);
  const Report back = load_report(path);
  CHECK(back.cases.size() == 3);
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    CHECK(entry.path().string().find(path + ".tmp") == std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("loading refuses what is not a readable report of a known schema") {
  const std::string path = temp_path("bad.json");
  CHECK_THROWS_WITH_AS(load_report(path + ".missing"), doctest::Contains("cannot be opened"),
                       moe::UsageError);
  write_text(path, "{ not json");
  CHECK_THROWS_WITH_AS(load_report(path), doctest::Contains("not valid JSON"), moe::UsageError);
  write_text(path, R"({"schema": "something.else"})");
  CHECK_THROWS_WITH_AS(load_report(path), doctest::Contains("not a moebench report"),
                       moe::UsageError);
  json newer = sample_report();
  newer["schema_version"] = kSchemaVersion + 1;
  write_text(path, newer.dump());
  CHECK_THROWS_WITH_AS(load_report(path), doctest::Contains("newer moebench"), moe::UsageError);
  json mistyped = sample_report();
  mistyped["cases"][0]["m"] = "one";
  write_text(path, mistyped.dump());
  CHECK_THROWS_WITH_AS(load_report(path), doctest::Contains("mistyped"), moe::UsageError);
  std::filesystem::remove(path);
}

TEST_CASE("the environment block has host and software fields even without a GPU") {
  const json env = capture_environment(0);
  CHECK(env.at("host").contains("hostname"));
  CHECK(env.at("host").contains("os"));
  CHECK(env.at("software").contains("cuda_runtime"));
  CHECK(env.at("gpu").contains("available"));
  if (!env.at("gpu").at("available").get<bool>()) CHECK(env.at("gpu").contains("reason"));
}

TEST_CASE("kernel busy time: round-trips, and the launch gap is taken from it when present") {
  CaseResult c = sample_case(1);
  Measurement& m = c.measurements.at("main");
  // Overlapping kernels (programmatic dependent launch): summed durations above the event time.
  m.kernel_time_us = {12, 12.5, 13};
  m.kernel_busy_us = {9.5, 9.75, 10};
  const json j = c;
  const json& jm = j.at("measurements").at("main");
  CHECK(jm.at("kernel_busy_us").at("median") == doctest::Approx(9.75));
  CHECK(jm.at("raw").at("kernel_busy_us") == json{9.5, 9.75, 10});
  // gpu {10.5, 10.25, 10.75} - busy {9.5, 9.75, 10} = {1, 0.5, 0.75}: never negative.
  CHECK(jm.at("launch_gap_us").at("median") == doctest::Approx(0.75));
  CHECK(jm.at("launch_gap_us").at("min") >= 0.0);
  const Measurement back = j.get<CaseResult>().measurements.at("main");
  CHECK(back.kernel_busy_us == std::vector<double>{9.5, 9.75, 10});
  CHECK(json(back) == jm);
  // The table's kernel column shows the busy time.
  CHECK(summarize_case(j.get<CaseResult>()).kernel_time_us == doctest::Approx(9.75));
}

TEST_CASE("kernel busy time: a report without it reads back with none, gap from the sum") {
  const json j = sample_case(1);
  const json& jm = j.at("measurements").at("main");
  CHECK_FALSE(jm.contains("kernel_busy_us"));
  CHECK_FALSE(jm.at("raw").contains("kernel_busy_us"));
  CHECK(jm.at("launch_gap_us").at("median") == doctest::Approx(1.25));
  CHECK(j.get<CaseResult>().measurements.at("main").kernel_busy_us.empty());
}

TEST_CASE("the L2 flush's observation round-trips, and reports without it still load") {
  CaseResult c = sample_case(1);
  L2Observed o;
  o.samples_observed = 5;
  o.observe_every = 4;
  o.lines = 32;
  o.flushes_unfinished = 1;
  o.evicted_fraction_median = 0.25;
  o.evicted_fraction_min = 0.125;
  o.cold_load_cycles_median = 610;
  o.hot_load_cycles_median = 290;
  c.measurements["main"].l2_observed = o;
  const json j = c;
  const json& written = j.at("measurements").at("main").at("l2_observed");
  CHECK(written.at("flushes_unfinished") == 1);
  CHECK(written.at("evicted_fraction_median") == doctest::Approx(0.25));
  const CaseResult back = j.get<CaseResult>();
  REQUIRE(back.measurements.at("main").l2_observed.has_value());
  const L2Observed& b = *back.measurements.at("main").l2_observed;
  CHECK(b.samples_observed == 5);
  CHECK(b.observe_every == 4);
  CHECK(b.lines == 32);
  CHECK(b.evicted_fraction_min == doctest::Approx(0.125));
  CHECK(b.cold_load_cycles_median == doctest::Approx(610));
  CHECK(b.hot_load_cycles_median == doctest::Approx(290));
  // Older reports (and hot runs) have none.
  json old = j;
  old["measurements"]["main"].erase("l2_observed");
  CHECK_FALSE(old.get<CaseResult>().measurements.at("main").l2_observed.has_value());
}
