// Probes route-telemetry and expert-residency on the GPU, both ways: each passes on the engine
// as built, and fails under each of its mutations with the check its bug breaks.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/gpu_test.hpp"

namespace {

struct ProbeRun {
  int exit_code = -1;
  std::string log;
  nlohmann::json report;
  // check name -> passed, over every case (a check failing in any case counts as failed)
  std::map<std::string, bool> checks;
};

ProbeRun run_probe(const std::string& probe, const std::string& mutation, const std::string& extra) {
  const auto dir = moe::test::scratch_dir(probe + (mutation.empty() ? "" : "-" + mutation));
  const std::string out = (dir / "report.json").string();
  std::string args = "run " + probe + " --shape tiny --weight-format bf16 --min-samples 3 --max-samples 20 "
                     "--min-time 0 --no-kernel-timing --quiet --histogram -o " + moe::test::quote(out) +
                     " --fixtures " + moe::test::quote(moe::test::fixtures_dir()) + " " + extra;
  if (!mutation.empty()) args += " --mutation " + mutation;
  const moe::test::CliResult r = moe::test::moebench_line(args);
  ProbeRun p;
  p.exit_code = r.exit_code;
  p.log = r.out + r.err;
  REQUIRE_MESSAGE(std::filesystem::exists(out), "no report (exit " << r.exit_code << "): " << p.log);
  p.report = nlohmann::json::parse(moe::test::read_text(out));
  for (const auto& c : p.report.at("cases"))
    for (const auto& k : c.at("checks")) {
      auto [it, inserted] = p.checks.try_emplace(k.at("name").get<std::string>(), k.at("passed").get<bool>());
      if (!inserted) it->second = it->second && k.at("passed").get<bool>();
    }
  return p;
}

std::string verdicts(const ProbeRun& p) {
  std::string v;
  for (const auto& c : p.report.at("cases"))
    v += c.at("name").get<std::string>() + "=" + c.at("verdict").get<std::string>() + ": " +
         c.value("reason", std::string()) + "\n";
  return v;
}

// Each mutation of `probe` turns its run red on the check its bug breaks, and every case FAILs.
void expect_caught(const std::string& probe, const std::map<std::string, std::string>& broken, const std::string& extra) {
  for (const auto& [mutation, check] : broken) {
    CAPTURE(mutation);
    const ProbeRun p = run_probe(probe, mutation, extra);
    CAPTURE(verdicts(p));
    CHECK(p.exit_code == 1);
    REQUIRE(p.checks.count(check) == 1);
    CHECK_FALSE(p.checks.at(check));
    for (const auto& c : p.report.at("cases")) CHECK(c.at("verdict") == "FAIL");
  }
}

}  // namespace

TEST_CASE("route-telemetry passes on the engine as built, with a histogram a layer") {
  moe::test::test_device();
  const ProbeRun p = run_probe("route-telemetry", "", "--m 1,4 --telemetry checks");
  CAPTURE(verdicts(p));
  CHECK(p.exit_code == 0);
  for (const auto& [name, passed] : p.checks) CHECK_MESSAGE(passed, name);
  for (const char* name : {"armed_output_identical", "window_matches_oracle", "epoch_and_address_fixed",
                           "reset_refused_during_capture", "reset_opens_empty_window", "overflow_saturates_sticky",
                           "out_of_range_id_poisons", "two_engines_distinct_records"})
    CHECK_MESSAGE(p.checks.count(name) == 1, name);
  const auto& c0 = p.report.at("cases").at(0);
  for (const char* proof : {"replays_in_window", "reset_called_while_capturing", "overflow_forced", "two_engines_armed_at_once"})
    CHECK_MESSAGE(c0.at("evidence").value(proof, false), proof);
  REQUIRE(c0.at("evidence").contains("routing_histograms"));
  CHECK(c0.at("evidence").at("routing_histograms").at(0).at("layers").size() == 2);
}

TEST_CASE("route-telemetry measures the overhead of arming, with its interval") {
  moe::test::test_device();
  const ProbeRun p = run_probe("route-telemetry", "", "--m 4 --telemetry overhead");
  CAPTURE(verdicts(p));
  const auto& c = p.report.at("cases").at(0);
  CHECK(c.at("name") == "overhead");
  for (const char* metric : {"disarmed_gpu_us", "armed_gpu_us", "overhead_us", "overhead_low_us", "overhead_high_us",
                             "overhead_pct", "gate_us"})
    CHECK_MESSAGE(c.at("metrics").contains(metric), metric);
  CHECK(c.at("metrics").at("overhead_low_us").at("value").get<double>() <=
        c.at("metrics").at("overhead_high_us").at("value").get<double>());
  CHECK(c.at("measurements").contains("disarmed"));
}

TEST_CASE("route-telemetry fails under each of its mutations, on the check the bug breaks") {
  moe::test::test_device();
  expect_caught("route-telemetry",
                {{"telemetry-reset-per-replay", "window_matches_oracle"},
                 {"telemetry-count-wraps", "overflow_saturates_sticky"},
                 {"telemetry-reset-in-capture", "reset_refused_during_capture"}},
                "--m 4 --telemetry checks");
}

TEST_CASE("expert-residency passes on the engine as built") {
  moe::test::test_device();
  const ProbeRun p = run_probe("expert-residency", "", "--m 4");
  CAPTURE(verdicts(p));
  CHECK(p.exit_code == 0);
  for (const auto& [name, passed] : p.checks) CHECK_MESSAGE(passed, name);
  for (const char* name : {"all_resident_matches_reference", "transition_refused_during_capture",
                           "transition_refused_under_live_graph", "fault_rolls_back", "planned_output_identical",
                           "all_cold_output_identical", "tables_match_placement"})
    CHECK_MESSAGE(p.checks.count(name) == 1, name);
  const auto& c = p.report.at("cases").at(0);
  // Measured from the tables read back, not taken from the plan; every freed expert block poisoned.
  CHECK(c.at("evidence").at("experts_moved_by_plan").at("measured_from_tables").get<int>() ==
        c.at("evidence").at("plan").at("cold").get<int>());
  CHECK(c.at("evidence").at("transitions").at("stale_table_entries").get<int>() == 0);
  CHECK(c.at("evidence").at("transitions").at("freed_device_blocks_poisoned").get<int>() > 0);
  CHECK(c.at("verdict") == "PASS");
  CHECK(c.at("metrics").at("device_bytes_saved").at("value").get<double>() > 0);
  CHECK(c.at("evidence").at("plan").at("cold").get<int>() > 0);
  for (const char* proof : {"graph_live_during_transition", "experts_moved", "fault_injected"})
    CHECK_MESSAGE(c.at("evidence").value(proof, false), proof);
}

TEST_CASE("expert-residency fails under each of its mutations, on the check the bug breaks") {
  moe::test::test_device();
  expect_caught("expert-residency",
                {{"residency-under-live-graph", "transition_refused_under_live_graph"},
                 {"residency-no-rollback", "fault_rolls_back"},
                 {"residency-stale-column", "tables_match_placement"}},
                "--m 4");
}

TEST_CASE("a device budget larger than the device is refused in one line, exit 2") {
  moe::test::test_device();
  const moe::test::CliResult r =
      moe::test::moebench_line("run expert-residency --shape tiny --device-budget 1000000000000000 -o /tmp/moebench-budget.json");
  const std::string out = r.out + r.err;
  CAPTURE(out);
  CHECK(r.exit_code == 2);
  CHECK(out.find("--device-budget 1000000000000000 is larger than the device") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

TEST_CASE("expert-residency: a table column left stale reads the poisoned block it names") {
  moe::test::test_device();
  const ProbeRun p = run_probe("expert-residency", "residency-stale-column", "--m 4");
  CAPTURE(verdicts(p));
  CHECK(p.exit_code == 1);
  for (const char* name : {"tables_match_placement", "planned_output_identical"}) {
    REQUIRE_MESSAGE(p.checks.count(name) == 1, name);
    CHECK_FALSE_MESSAGE(p.checks.at(name), name);
  }
  const auto& c = p.report.at("cases").at(0);
  CHECK(c.at("evidence").at("transitions").at("stale_table_entries").get<int>() > 0);
}
