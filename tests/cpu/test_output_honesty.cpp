// What moebench prints and writes says what it is: the busy-time column, the NVIDIA driver apart
// from the CUDA version, "no driver" apart from "driver too old", -o checked as a file before
// any device work and a report never lost to an unwritable path, terminal text escaped and cut.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/nvidia_driver.hpp"
#include "reports/case_summary.hpp"
#include "reports/compare.hpp"
#include "reports/environment.hpp"
#include "reports/report_writer.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"
#include "support/cli_runner.hpp"

using namespace moe::report;
namespace fs = std::filesystem;

namespace {

Report one_case(bool with_busy) {
  CaseResult c;
  c.probe = "bandwidth";
  c.name = "step";
  Measurement m;
  m.gpu_time_us = {92.3, 92.3, 92.3};
  m.host_time_us = {5, 5, 5};
  m.kernel_time_us = {127, 127, 127};  // summed: overlapping kernels (PDL) counted twice
  if (with_busy) m.kernel_busy_us = {88.1, 88.1, 88.1};
  m.kernel_count = {4, 4, 4};
  m.kernel_timing = true;
  c.measurements["main"] = m;
  Report r;
  r.cases = {c};
  return r;
}

}  // namespace

TEST_CASE("the terminal's busy column is busy time, and says when it is a sum") {
  const std::string busy = render_table(one_case(true));
  CHECK(busy.find("busy us") != std::string::npos);
  CHECK(busy.find("kern us") == std::string::npos);
  CHECK(busy.find("88.1") != std::string::npos);
  CHECK(busy.find("127") == std::string::npos);
  CHECK(busy.find("* the sum") == std::string::npos);
  // A report from before busy time: the sum, marked, with the footnote.
  const std::string old = render_table(one_case(false));
  CHECK(old.find("127*") != std::string::npos);
  CHECK(old.find("* the sum of kernel durations") != std::string::npos);
}

TEST_CASE("no NVIDIA driver is told apart from a driver too old for the runtime") {
  moe::NvidiaDriver none;
  const std::string no_driver = moe::explain_no_cuda(
      "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version",
      none, 0, 13000);
  CHECK(no_driver.find("no NVIDIA driver") != std::string::npos);
  CHECK(no_driver.find("too old") == std::string::npos);
  moe::NvidiaDriver old;
  old.libcuda = true;
  old.version = "535.104.05";
  const std::string too_old = moe::explain_no_cuda(
      "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version",
      old, 12020, 13000);
  CHECK(too_old ==
        "the NVIDIA driver 535.104.05 (CUDA 12.2) is too old for this CUDA runtime 13.0 "
        "(cudaErrorInsufficientDriver: update the driver)");
  const std::string other =
      moe::explain_no_cuda("cudaErrorNoDevice", "no CUDA-capable device is detected", old, 13000,
                           13000);
  CHECK(other == "cudaErrorNoDevice: no CUDA-capable device is detected (NVIDIA driver 535.104.05)");
  // This machine as it is: whatever it has, the message matches it.
  const moe::NvidiaDriver here = moe::probe_nvidia_driver();
  const nlohmann::json env = capture_environment(0);
  CHECK(env.at("software").contains("nvidia_driver"));
  if (!here.libcuda) {
    const auto r = moe::test::moebench("run", "copy", "-o", "/tmp/moebench-nodriver.json");
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("no NVIDIA driver") != std::string::npos);
    CHECK(r.err.find("insufficient") == std::string::npos);
    CHECK(env.at("gpu").at("reason").get<std::string>().find("no NVIDIA driver") == 0);
    CHECK(env.at("software").at("nvidia_driver").is_null());
    CHECK(env.at("software").at("nvidia_driver_reason").get<std::string>().find("no NVIDIA driver") == 0);
  } else if (here.version) {
    CHECK(env.at("software").at("nvidia_driver") == *here.version);
  }
}

TEST_CASE("the environment block and its one-line summary carry the NVIDIA driver's version") {
  Report r;
  r.environment = {{"gpu", {{"available", true}, {"name", "NVIDIA H200"}}},
                   {"software", {{"cuda_driver", "13.0"}, {"nvidia_driver", "580.95.05"},
                                 {"cuda_runtime", "13.0"}}}};
  const std::string line = describe_gpu(r);
  CHECK(line.find("driver 580.95.05, driver CUDA 13.0, runtime 13.0") != std::string::npos);
  Report other = r;
  other.environment["software"]["nvidia_driver"] = "570.86.15";
  bool listed = false;
  for (const EnvironmentDifference& d : environment_differences(r, other))
    listed |= d.field == "NVIDIA driver" && d.base == "580.95.05" && d.head == "570.86.15";
  CHECK(listed);
}

TEST_CASE("-o naming a folder is refused before any device work") {
  const auto dir = moe::test::scratch_dir("output-folder");
  const auto r = moe::test::moebench("run", "copy", "-o", dir.string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is a folder: name the report file") != std::string::npos);
  const fs::path locked = dir / "locked.json";
  std::ofstream(locked) << "{}";
  fs::permissions(locked, fs::perms::owner_read);
  if (::access(locked.c_str(), W_OK) != 0) {  // root can write anything: nothing to test then
    const auto ro = moe::test::moebench("run", "copy", "-o", locked.string());
    CHECK(ro.exit_code == 2);
    CHECK(ro.err.find("exists and is not writable") != std::string::npos);
  }
}

TEST_CASE("a report that cannot be written where asked is written beside it, and says where") {
  const auto dir = moe::test::scratch_dir("output-fallback");
  const std::string path = (dir / "report.json").string();
  const ReportWriter writer(path);
  Report r = one_case(true);
  writer.write(r);
  CHECK_FALSE(writer.fell_back());
  // The path becomes a folder mid-run: the rename over it fails.
  fs::remove(path);
  fs::create_directories(path);
  writer.write(r);
  REQUIRE(writer.fell_back());
  CHECK(writer.path() == ReportWriter::fallback_paths(path).front());
  CHECK(writer.path().find(dir.string()) == 0);  // beside it
  CHECK(load_report(writer.path()).cases.size() == 1);
  r.cases.push_back(r.cases.front());
  r.cases.back().name = "second";
  writer.write(r);  // later writes go to the fallback too
  CHECK(load_report(writer.path()).cases.size() == 2);
}

TEST_CASE("terminal text: control and bidi characters escaped, long names cut") {
  CHECK(escape_terminal("plain") == "plain");
  CHECK(escape_terminal("a\x1b[31mred") == "a\\x1b[31mred");
  CHECK(escape_terminal("line\nbreak\t") == "line\\x0abreak\\x09");
  CHECK(escape_terminal("evil\xe2\x80\xaetxt.exe") == "evil\\u{202e}txt.exe");   // U+202E
  CHECK(escape_terminal("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u{2066}x\\u{2069}");  // isolates
  CHECK(escape_terminal("c1\xc2\x9b") == "c1\\u{009b}");                          // CSI in C1
  CHECK(escape_terminal("bad\xff") == "bad\\xff");
  CHECK(escape_terminal("H200 \xe2\x9c\x93") == "H200 \xe2\x9c\x93");  // other UTF-8 kept
  CHECK(escape_terminal("abcdefghij", 5) == "abcd\xe2\x80\xa6");
  CHECK(escape_terminal("abcde", 5) == "abcde");

  CaseResult c;
  c.probe = "bandwidth";
  c.name = "step\x1b]0;owned\x07";
  c.shape = std::string(300, 'x');
  c.verdict = Verdict::fail;
  c.reason = "reason \xe2\x80\xae reversed";
  Report r;
  r.cases = {c};
  const std::string table = render_table(r);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find('\x07') == std::string::npos);
  CHECK(table.find("\xe2\x80\xae") == std::string::npos);
  CHECK(table.find("\\x1b]0;owned\\x07") != std::string::npos);
  CHECK(table.find(std::string(300, 'x')) == std::string::npos);
  CHECK(table.find(std::string(119, 'x') + "\xe2\x80\xa6") != std::string::npos);
}
