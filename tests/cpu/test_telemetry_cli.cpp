// Bad input to the telemetry and residency options: exit 2 and one line naming the value and
// the valid ones, before any device is touched (so these run without a GPU).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

struct Result {
  int code = -1;
  std::string out;
};

Result run(const std::string& args) {
  const moe::test::CliResult r = moe::test::moebench_line(args);
  return {r.exit_code, r.out + r.err};
}

}  // namespace

TEST_CASE("telemetry and residency options with bad values exit 2 in one line") {
  struct Case {
    const char* args;
    const char* says;
  };
  const Case cases[] = {
      {"run route-telemetry --telemetry sometimes", "--telemetry 'sometimes' is not valid; valid: all, checks, overhead"},
      {"run route-telemetry --telemetry", "--telemetry"},
      {"run copy --telemetry checks", "--telemetry checks applies to probe route-telemetry"},
      {"run copy --histogram", "--histogram: probe copy has no routing histogram; probes with one: route-telemetry"},
      {"run route-telemetry bandwidth --histogram", "--histogram: probe bandwidth has no routing histogram"},
      {"run route-telemetry --histogram=maybe", "--histogram"},
      {"run copy --hot-share 0.5", "--hot-share applies to probe expert-residency"},
      {"run copy --device-budget 100000000", "--device-budget applies to probe expert-residency"},
      {"run expert-residency --hot-share 0", "--hot-share 0.000000 is out of range: a share of the routed pairs above 0 and at most 1"},
      {"run expert-residency --hot-share 1.5", "--hot-share 1.500000 is out of range"},
      {"run expert-residency --hot-share -0.1", "--hot-share -0.100000 is out of range"},
      {"run expert-residency --hot-share lots", "--hot-share"},
      {"run expert-residency --device-budget 1000", "--device-budget 1000 is below one expert of deepseek-v2-lite (bf16): 17301504 bytes"},
      {"run expert-residency --shape tiny --weight-format int4 --device-budget 10", "--device-budget 10 is below one expert of tiny (int4)"},
      {"run expert-residency --device-budget -5", "--device-budget"},
      {"run expert-residency --device-budget lots", "--device-budget"},
  };
  for (const Case& c : cases) {
    // -o first: an option left without its value must not take the file name as one.
    const std::string args = "run -o /tmp/moebench-telemetry-cli.json " + std::string(c.args).substr(4);
    CAPTURE(args);
    const Result r = run(args);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(c.says) != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
}

TEST_CASE("the histogram request is accepted for the default suite, which has a probe with one") {
  // Validation passes; without a GPU the run then stops at the device (exit 3), with one.
  const Result r = run("run --histogram --telemetry checks -o /tmp/moebench-telemetry-cli-suite.json");
  CHECK(r.code != 2);
}

TEST_CASE("repro of a report reruns with its telemetry, histogram and residency options") {
  auto j = nlohmann::json::parse(moe::test::read_text(moe::test::data_file("reports/h200-copy.json")));
  auto& cases = j.at("cases");
  nlohmann::json telemetry = cases.at(0), residency = cases.at(0);
  telemetry["probe"] = "route-telemetry";
  telemetry["name"] = "window";
  residency["probe"] = "expert-residency";
  residency["name"] = "transition";
  cases = nlohmann::json::array({telemetry, residency});
  j["options"]["telemetry"] = "checks";
  j["options"]["histogram"] = true;
  j["options"]["hot_share"] = 0.25;
  j["options"]["device_budget"] = 123456789;
  const auto dir = moe::test::scratch_dir("telemetry-repro");
  const std::string file = (dir / "report.json").string();
  std::ofstream(file) << j.dump();
  const moe::test::CliResult r = moe::test::moebench("repro", file, "--dry-run");
  const std::string out = r.out + r.err;
  CAPTURE(out);
  CHECK(r.exit_code == 0);
  for (const char* arg : {"--telemetry checks", "--histogram", "--hot-share 0.25", "--device-budget 123456789"})
    CHECK_MESSAGE(out.find(arg) != std::string::npos, arg);
}
