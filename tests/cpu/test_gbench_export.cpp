// Google Benchmark JSON export, read by Google Benchmark's own compare.py (Debian package
// libbenchmark-tools, which needs python3-scipy; CI installs both, so their absence fails).
#include <doctest/doctest.h>

#include <filesystem>

#include "support/cli_runner.hpp"
#include "reports/gbench_export.hpp"

using namespace moe::report;
using moe::test::data_file;
using moe::test::moebench;

namespace {

std::string report(const std::string& name) { return data_file("reports/" + name); }

constexpr const char* kCompareScript = "/usr/share/benchmark/compare.py";

// The interpreter compare.py runs under: the distribution's, where python3-scipy installs.
std::string python() {
  for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (std::filesystem::exists(p)) return p;
  return "python3";
}

}  // namespace

TEST_CASE("gbench JSON: one benchmark per case and measurement, medians in us") {
  const Report r = load_report(report("h200-base.json"));
  const nlohmann::json j = to_gbench_json(r);
  REQUIRE(j.at("benchmarks").size() == r.cases.size());
  const auto& b = j.at("benchmarks")[0];
  CHECK(b.at("name") == r.cases[0].key());
  CHECK(b.at("time_unit") == "us");
  CHECK(b.at("run_type") == "iteration");
  CHECK(b.at("iterations") == r.cases[0].measurements.at("main").samples());
  CHECK(b.at("real_time").get<double>() ==
        doctest::Approx(r.cases[0].measurements.at("main").gpu_time().median));
  CHECK(b.at("cpu_time").get<double>() ==
        doctest::Approx(r.cases[0].measurements.at("main").host_time().median));
  CHECK(j.at("context").contains("date"));
}

TEST_CASE("compare.py reads two exports and sees the planted slowdown") {
  REQUIRE_MESSAGE(std::filesystem::exists(kCompareScript),
                  "install libbenchmark-tools (and python3-scipy): scripts/setup.sh does");
  const auto dir = moe::test::scratch_dir("gbench");
  const auto base = (dir / "base.json").string(), head = (dir / "head.json").string();
  REQUIRE(moebench("render", report("h200-base.json"), "--format", "gbench", "-o", base).exit_code == 0);
  REQUIRE(moebench("render", report("h200-slower-5pct.json"), "--format", "gbench", "-o", head).exit_code == 0);

  const auto r = moe::test::run_shell(python() + " " + kCompareScript + " --no-color benchmarks " +
                                      moe::test::quote(base) + " " + moe::test::quote(head));
  INFO("stdout: " << r.out);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  // compare.py prints one line per benchmark: name, time delta, cpu delta, old/new times.
  const std::string slowed = "bandwidth/graph/shape=deepseek-v2-lite/m=8/format=bf16/mode=graph";
  const auto at = r.out.find(slowed);
  REQUIRE(at != std::string::npos);
  std::istringstream line(r.out.substr(at + slowed.size()));
  double time_delta = 0, cpu_delta = 0;
  line >> time_delta >> cpu_delta;
  CHECK(time_delta == doctest::Approx(0.05).epsilon(0.2));  // +5%, as planted
  // An unchanged case reads as close to zero.
  const std::string same = "copy/read/mode=read";
  const auto at_same = r.out.find(same);
  REQUIRE(at_same != std::string::npos);
  std::istringstream same_line(r.out.substr(at_same + same.size()));
  double same_delta = 1;
  same_line >> same_delta;
  CHECK(std::abs(same_delta) < 0.01);
  CHECK(r.out.find("OVERALL_GEOMEAN") != std::string::npos);
}
