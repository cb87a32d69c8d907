// The suite survives its probes: a probe that poisons its CUDA context is recorded as that
// probe's error and the others still run; Ctrl-C or SIGTERM leave a whole, partial report with
// the running probe's finished cases, and exit 130 or 143.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/gpu_test.hpp"

TEST_CASE("a sticky CUDA error in one probe leaves the rest of the suite's results intact") {
  moe::test::test_device();
  const auto dir = moe::test::scratch_dir("isolation");
  const std::string report = (dir / "r.json").string();
  const auto r = moe::test::moebench("run", "copy", "two-engine", "--mutation", "illegal-address",
                                     "-o", report, "--fixtures", moe::test::fixtures_dir(),
                                     "--copy-bytes", "1073741824");
  CHECK(r.exit_code == 4);
  const auto j = nlohmann::json::parse(moe::test::read_text(report));
  bool copy_errored = false, two_engine_passed = false;
  for (const auto& c : j.at("cases")) {
    if (c.at("probe") == "copy" && c.at("verdict") == "ERROR") {
      copy_errored = true;
      CHECK(c.at("reason").get<std::string>().find("cudaErrorIllegalAddress") != std::string::npos);
    }
    if (c.at("probe") == "two-engine" && c.at("verdict") == "PASS") two_engine_passed = true;
  }
  CHECK(copy_errored);
  CHECK(two_engine_passed);
  CHECK(j.at("invocation").at("complete") == true);
}

TEST_CASE("Ctrl-C writes the partial report and exits 130") {
  moe::test::test_device();
  const auto dir = moe::test::scratch_dir("sigint");
  const std::string report = (dir / "r.json").string();
  const std::string cmd = "exec " + moe::test::quote(moe::test::moebench_binary()) +
                          " run two-engine bandwidth --shape tiny --fixtures " +
                          moe::test::quote(moe::test::fixtures_dir()) + " -o " +
                          moe::test::quote(report) + " >/dev/null 2>&1";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so the signal reaches the run and its children only
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the first probe's cases are on disk (the report is written before any probe,
  // with the argv naming every probe, so look at its cases), then interrupt the whole group.
  auto has_cases = [&] {
    if (!std::filesystem::exists(report)) return false;
    const auto doc = nlohmann::json::parse(moe::test::read_text(report), nullptr, false);
    return !doc.is_discarded() && doc.contains("cases") && !doc.at("cases").empty();
  };
  for (int i = 0; i < 600 && !has_cases(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(-pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const auto j = nlohmann::json::parse(moe::test::read_text(report));
  CHECK(j.at("invocation").at("complete") == false);
  CHECK(j.at("invocation").value("interrupted", false));
  CHECK(j.at("invocation").at("interruption").at("signal") == "SIGINT");
  CHECK(j.at("cases").size() >= 1);
}

TEST_CASE("SIGTERM to the run alone keeps the running probe's finished cases and exits 143") {
  moe::test::test_device();
  const auto dir = moe::test::scratch_dir("sigterm");
  const std::string report = (dir / "r.json").string();
  const std::string cmd = "exec " + moe::test::quote(moe::test::moebench_binary()) +
                          " run copy bandwidth --shape tiny --copy-bytes 1073741824 --fixtures " +
                          moe::test::quote(moe::test::fixtures_dir()) + " -o " +
                          moe::test::quote(report) + " >/dev/null 2>&1";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // As `timeout` does: the signal to the run, once the probe running in its child process has
  // finished a case (copy's three are in before bandwidth starts).
  auto bandwidth_cases = [&] {
    if (!std::filesystem::exists(report)) return std::size_t{0};
    const auto doc = nlohmann::json::parse(moe::test::read_text(report), nullptr, false);
    std::size_t n = 0;
    if (!doc.is_discarded() && doc.contains("cases"))
      for (const auto& c : doc.at("cases")) n += c.at("probe") == "bandwidth";
    return n;
  };
  for (int i = 0; i < 1200 && bandwidth_cases() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(bandwidth_cases() > 0);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  kill(-pid, SIGKILL);  // nothing of the run may outlive the test
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 143);
  const auto j = nlohmann::json::parse(moe::test::read_text(report));
  std::size_t copy = 0, bandwidth = 0;
  for (const auto& c : j.at("cases")) {
    CHECK(c.at("verdict") != "ERROR");
    copy += c.at("probe") == "copy";
    bandwidth += c.at("probe") == "bandwidth";
  }
  CHECK(copy == 3);
  CHECK(bandwidth >= 1);
  const auto& stop = j.at("invocation").at("interruption");
  CHECK(stop.at("signal") == "SIGTERM");
  CHECK(stop.at("probe") == "bandwidth");
  CHECK(stop.at("probe_cases") == bandwidth);
  CHECK(stop.at("cases") == copy + bandwidth);
}

TEST_CASE("a shape whose one layer does not fit the device is exit 3, its reason in the report") {
  moe::test::test_device();
  const auto dir = moe::test::scratch_dir("too-large");
  const std::string shape = (dir / "too-large.json").string();
  // One bf16 layer: 64 experts x 3 x 16384 x 65536 x 2 bytes = 412 GB, more than any GPU has.
  std::ofstream(shape) << R"({"name": "too-large", "hidden": 16384, "moe_inter": 65536,
    "experts": 64, "top_k": 2, "shared_experts": 0, "scoring": "softmax", "renormalize": true,
    "description": "one layer is 412 GB"})";
  const std::string report = (dir / "r.json").string();
  const auto r = moe::test::moebench("run", "bandwidth", "--shape", shape, "--m", "1",
                                     "--weight-format", "bf16", "-o", report);
  CHECK(r.exit_code == 3);
  const auto j = nlohmann::json::parse(moe::test::read_text(report));
  REQUIRE(j.at("cases").size() == 1);
  const auto& c = j.at("cases").at(0);
  CHECK(c.at("verdict") == "ERROR");
  CHECK(c.at("evidence").value("environment", false));
  CHECK(c.at("reason").get<std::string>().find("needs") != std::string::npos);
  CHECK(c.at("reason").get<std::string>().find("MiB of device memory is available") !=
        std::string::npos);
}

TEST_CASE("--filter runs only the cases it matches; stderr counts them over the whole run") {
  moe::test::test_device();
  const auto dir = moe::test::scratch_dir("filter-progress");
  for (const bool in_process : {false, true}) {
    CAPTURE(in_process);
    const std::string report = (dir / (in_process ? "in.json" : "per-probe.json")).string();
    const std::string cmd = moe::test::quote(moe::test::moebench_binary()) +
                            " run two-engine drop-after-inflight --repeat 2 --filter " +
                            moe::test::quote("sequence#1|/layer") + " --fixtures " +
                            moe::test::quote(moe::test::fixtures_dir()) + " -o " +
                            moe::test::quote(report) + (in_process ? " --in-process" : "");
    const auto r = moe::test::run_shell(cmd);
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    const auto j = nlohmann::json::parse(moe::test::read_text(report));
    std::vector<std::string> keys;
    for (const auto& c : j.at("cases")) keys.push_back(c.at("key").get<std::string>());
    REQUIRE(keys.size() == 3);
    CHECK(keys[0].rfind("two-engine/sequence#1/shape=tiny/m=4/format=bf16", 0) == 0);
    CHECK(keys[1].rfind("drop-after-inflight/layer#0/shape=tiny/m=16/format=bf16", 0) == 0);
    CHECK(keys[2].rfind("drop-after-inflight/layer#1/shape=tiny/m=16/format=bf16", 0) == 0);
    CHECK(j.at("options").at("filter") == "sequence#1|/layer");
    // One line as each case starts, in the order the cases ran, numbered 1..3 of 3.
    std::size_t previous = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::size_t at = r.err.find("case " + std::to_string(i + 1) + " of 3: " + keys[i] + "\n");
      REQUIRE(at != std::string::npos);
      CHECK(at >= previous);
      previous = at;
    }
  }
}
