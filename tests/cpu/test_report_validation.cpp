// load_report validates before anything uses a report (reports/report_validation.hpp): impossible
// samples, misaligned series, counts that disagree, values out of physical range, and files
// above the size limit are refused with exit 2, naming the case, the field and the value.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/errors.hpp"
#include "reports/report.hpp"
#include "reports/report_validation.hpp"
#include "support/cli_runner.hpp"

using namespace moe::report;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kGood = moe::test::data_file("reports/h200-base.json");

// ASan's allocator pads every allocation and holds freed blocks in quarantine, so under it a
// document's resident size is the sanitizer's, not the loader's (measured 14x the text at -O0).
// (GCC and Clang both define __SANITIZE_ADDRESS__ under -fsanitize=address.)
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

json good() { return json::parse(moe::test::read_text(kGood)); }

// The message load_report refuses `j` with, or "" when it loads.
std::string refusal(const json& j, const std::string& name) {
  static const fs::path dir = moe::test::scratch_dir("report-validation");
  const std::string path = (dir / name).string();
  std::ofstream(path) << j.dump();
  try {
    (void)load_report(path);
  } catch (const moe::UsageError& e) {
    return e.what();
  }
  return "";
}

// Case 3 of h200-base.json is a bandwidth case with kernel timing.
json& main_of(json& j) { return j["cases"][3]["measurements"]["main"]; }

}  // namespace

TEST_CASE("the loader refuses impossible samples, naming the case, the field and the value") {
  REQUIRE(refusal(good(), "good.json").empty());
  struct Bad {
    const char* name;
    std::function<void(json&)> edit;
    std::string expect;
  };
  const Bad cases[] = {
      {"negative", [](json& j) { main_of(j)["raw"]["gpu_time_us"][4] = -1.0; },
       "case 3: measurements.main.raw.gpu_time_us[4] = -1: a time must be finite and positive"},
      {"zero", [](json& j) { main_of(j)["raw"]["gpu_time_us"][0] = 0; },
       "case 3: measurements.main.raw.gpu_time_us[0] = 0: a time must be finite and positive"},
      {"huge", [](json& j) { main_of(j)["raw"]["host_time_us"][2] = 1e308; },
       "case 3: measurements.main.raw.host_time_us[2] = 1e+308"},
      {"clock", [](json& j) { main_of(j)["raw"]["sm_clock_mhz"][1] = 1e6; },
       "measurements.main.raw.sm_clock_mhz[1] = 1000000: an SM clock must be 0 (unknown) to 10000"},
      {"fractional-count", [](json& j) { main_of(j)["raw"]["kernel_count"][0] = 2.5; },
       "measurements.main.raw.kernel_count[0] = 2.5: a kernel count must be a whole number"},
      {"empty",
       [](json& j) {
         for (const char* s : {"gpu_time_us", "host_time_us", "kernel_time_us", "kernel_count",
                               "sm_clock_mhz", "throttled"})
           main_of(j)["raw"][s] = json::array();
       },
       "measurements.main.raw.gpu_time_us is empty"},
      {"misaligned",
       [](json& j) {
         json& raw = main_of(j)["raw"];
         raw["gpu_time_us"] = json{10.0, 10.1, 10.2, 10.3, 10.4};
       },
       "measurements.main.raw.kernel_time_us has "},
      {"samples-count", [](json& j) { main_of(j)["samples"] = 7; },
       "measurements.main.samples = 7 but the series holds "},
      {"summary-count", [](json& j) { main_of(j)["gpu_time_us"]["count"] = 2000; },
       "measurements.main.gpu_time_us.count = 2000 but the series holds "},
      {"throttled-count", [](json& j) { main_of(j)["throttled_samples"] = 3; },
       "measurements.main.throttled_samples = 3 but the series holds 0 samples"},
      {"gbps", [](json& j) { j["cases"][3]["metrics"]["gbps"]["value"] = 1e308; },
       "metrics.gbps.value = 1e+308: a bandwidth must be 0 to 1e5 GB/s"},
      {"pct", [](json& j) { j["cases"][3]["metrics"]["pct_of_read_ceiling"]["value"] = -5; },
       "metrics.pct_of_read_ceiling.value = -5: a percentage of the read ceiling must be 0 to 1000"},
      {"roofline-pct", [](json& j) { j["cases"][3]["metrics"]["pct_of_roofline"] = {{"value", 1500.0}, {"unit", "%"}}; },
       "metrics.pct_of_roofline.value = 1500: a percentage of a ceiling must be 0 to 1000"},
      {"tflops", [](json& j) { j["cases"][3]["metrics"]["tflops"] = {{"value", 2e4}, {"unit", "TFLOP/s"}}; },
       "metrics.tflops.value = 20000: an arithmetic rate must be 0 to 1e4 TFLOP/s"},
      {"flops", [](json& j) { j["cases"][3]["metrics"]["flops"] = {{"value", -1.0}, {"unit", "FLOP"}}; },
       "metrics.flops.value = -1: a FLOP count must be 0 to 1e21"},
      {"time-metric", [](json& j) { j["cases"][3]["metrics"]["gpu_us"] = {{"value", -2.0}, {"unit", "us"}}; },
       "metrics.gpu_us.value = -2: a time must be 0 to 1e9 microseconds"},
      {"difference", [](json& j) { j["cases"][3]["metrics"]["overhead_us"] = {{"value", -2e9}, {"unit", "us"}}; },
       "metrics.overhead_us.value = -2000000000: a time difference must be -1e9 to 1e9 microseconds"},
      {"m", [](json& j) { j["cases"][3]["m"] = 0; },
       "m = 0: tokens per forward must be 1 to 65536"},
  };
  for (const Bad& b : cases) {
    CAPTURE(std::string(b.name));
    json j = good();
    b.edit(j);
    const std::string e = refusal(j, std::string(b.name) + ".json");
    CHECK_MESSAGE(e.find(b.expect) != std::string::npos, b.name << ": " << e);
    CHECK(e.find(std::string(b.name) + ".json") != std::string::npos);  // the file
    CHECK(e.find("case 3") != std::string::npos);                       // the case
  }
  // A nominal bandwidth (each token's expert reads counted apart) exceeds any memory's rate at
  // prefill sizes: a prefill run's 117,090 GB/s loads; below zero it does not.
  json prefill = good();
  prefill["cases"][3]["metrics"]["gbps_no_dedup"] = {{"value", 117090.0}, {"unit", "GB/s"}};
  CHECK(refusal(prefill, "prefill.json").empty());
  prefill["cases"][3]["metrics"]["gbps_no_dedup"]["value"] = -1.0;
  CHECK(refusal(prefill, "prefill.json").find("metrics.gbps_no_dedup.value = -1: a nominal bandwidth must be 0 or more") !=
        std::string::npos);
  // A shift between two timings may be negative (noise around a small effect): it loads.
  json shifted = good();
  shifted["cases"][3]["metrics"]["overhead_low_us"] = {{"value", -0.86}, {"unit", "us"}};
  CHECK(refusal(shifted, "shift.json").empty());
  // After parsing, the message carries the case's key as well.
  json j = good();
  main_of(j)["samples"] = 7;
  CHECK(refusal(j, "keyed.json").find("case 3 (bandwidth/graph/shape=deepseek-v2-lite/m=1/") !=
        std::string::npos);
}

TEST_CASE("moebench compare: an impossible sample is exit 2 in one line, not a verdict") {
  const auto dir = moe::test::scratch_dir("validation-cli");
  json zeros = good();
  for (json& c : zeros["cases"])
    for (auto& [name, m] : c["measurements"].items())
      for (json& v : m["raw"]["gpu_time_us"]) v = 0;
  const std::string path = (dir / "zeros.json").string();
  std::ofstream(path) << zeros.dump();
  const auto r = moe::test::moebench("compare", kGood, path);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("zeros.json': case 0: measurements.main.raw.gpu_time_us[0] = 0") !=
        std::string::npos);
  CHECK(r.out.find("SLOWER") == std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("a report above the size limit is refused before it is parsed") {
  const auto dir = moe::test::scratch_dir("validation-size");
  // 64 MiB + 1 of NUL bytes (a sparse file: no disk, no time). Parsing it would say "not valid
  // JSON"; the refusal names the size, so it came first.
  const fs::path big = dir / "big.json";
  { std::ofstream(big).put('\0'); }
  fs::resize_file(big, kDefaultMaxReportBytes + 1);
  try {
    (void)load_report(big.string());
    FAIL("a file above the limit loaded");
  } catch (const moe::UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("is 67108865 bytes, above the limit of 67108864 bytes") != std::string::npos);
    CHECK(what.find("MOEBENCH_MAX_REPORT_BYTES") != std::string::npos);
    CHECK(what.find("not valid JSON") == std::string::npos);
  }
  // The limit can be lowered (and raised) for one process.
  ::setenv("MOEBENCH_MAX_REPORT_BYTES", "1000", 1);
  CHECK_THROWS_WITH_AS(load_report(kGood), doctest::Contains("above the limit of 1000 bytes"),
                       moe::UsageError);
  ::setenv("MOEBENCH_MAX_REPORT_BYTES", "lots", 1);
  CHECK_THROWS_WITH_AS(load_report(kGood), doctest::Contains("MOEBENCH_MAX_REPORT_BYTES='lots'"),
                       moe::UsageError);
  ::unsetenv("MOEBENCH_MAX_REPORT_BYTES");
  CHECK_NOTHROW((void)load_report(kGood));
}

// Peak resident size, in KiB, of `moebench render PATH` (a fresh process: wait4's rusage).
static long render_peak_kb(const std::string& path, int expected_exit = 0) {
  const std::string binary = moe::test::moebench_binary();
  const pid_t child = ::fork();
  if (child == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    const char* argv[] = {binary.c_str(), "render", path.c_str(), "-o", "/dev/null", nullptr};
    ::execv(binary.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  if (child < 0 || ::wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != expected_exit)
    return -1;
  return usage.ru_maxrss;
}

TEST_CASE("loading takes a small multiple of the file's size in memory; zeros take none") {
  // Peak resident sizes of `moebench render` on three files, each against the 73 kB original.
  // The children are forked from this process, whose resident size they start from: the files
  // are written and their documents freed (and the heap trimmed) first, so every child starts
  // from the same size and the differences are what each load cost.
  const auto dir = moe::test::scratch_dir("validation-memory");
  const fs::path large = dir / "large.json", zeros = dir / "zeros.json";
  {
    // 200 copies of the cases (about 15 MB): a real report's mix of series and summaries.
    json j = good();
    json cases = json::array();
    for (int copy = 0; copy < 200; ++copy)
      for (json c : j["cases"]) {
        c["name"] = c["name"].get<std::string>() + "#" + std::to_string(copy);
        cases.push_back(std::move(c));
      }
    j["cases"] = std::move(cases);
    std::ofstream(large) << j.dump();
    // 12 MB of zero samples in one series.
    json z = good();
    main_of(z)["raw"]["gpu_time_us"] = json::array();
    std::string text = z.dump();
    const std::string at = "\"gpu_time_us\":[]";
    const std::size_t where = text.find(at);
    REQUIRE(where != std::string::npos);
    std::string many = "\"gpu_time_us\":[0";
    many.reserve(12 << 20);
    while (many.size() < (12u << 20)) many += ",0";
    text.replace(where, at.size(), many + "]");
    std::ofstream(zeros) << text;
  }
  ::malloc_trim(0);
  const long small_kb = render_peak_kb(kGood);
  const long large_kb = render_peak_kb(large.string());
  const long zeros_kb = render_peak_kb(zeros.string(), 2);
  REQUIRE(small_kb > 0);
  REQUIRE(large_kb > 0);
  REQUIRE(zeros_kb > 0);
  const double large_file_kb = static_cast<double>(fs::file_size(large)) / 1024;
  const double zeros_file_kb = static_cast<double>(fs::file_size(zeros)) / 1024;
  REQUIRE(large_file_kb > 10000);
  CAPTURE(large_file_kb);
  CAPTURE(large_kb - small_kb);
  CAPTURE(zeros_file_kb);
  CAPTURE(zeros_kb - small_kb);
  // The document of a real report: measured 6.8x its text (16-byte values and map nodes for
  // 8-character numbers and 8-key summaries); 64 MiB, the limit, bounds it near 450 MB.
  if (kAddressSanitizer)
    MESSAGE("the document's size bound is checked without AddressSanitizer, whose allocator it would measure");
  else
    CHECK(static_cast<double>(large_kb - small_kb) < 8 * large_file_kb);
  // Zeros are refused at the first by the scan, which builds no document (parsed whole, they
  // cost 36x: a 16-byte value and more per 2 bytes of "0,").
  CHECK(static_cast<double>(zeros_kb - small_kb) < 0.5 * zeros_file_kb);
}

TEST_CASE("a real prefill report loads: its nominal bandwidth above any memory's, its compute figures") {
  // `moebench run bandwidth --shape mixtral-8x7b,qwen3-30b-a3b --m 4096 --weight-format bf16
  // --mode graph` on an H100 (2026-12-06): each token's expert reads counted apart add up to
  // 160,000 GB/s, which no memory reads, and which the loader once refused.
  const Report r = load_report(moe::test::data_file("reports/recorded-h100-prefill-bandwidth.json"));
  REQUIRE(r.cases.size() == 2);
  for (const CaseResult& c : r.cases) {
    CAPTURE(c.key());
    CHECK(c.verdict == Verdict::pass);
    CHECK(c.metrics.at("tflops").value > 0);
    CHECK(c.metrics.at("compute_ceiling_tflops").value > 100);
    CHECK(c.metrics.at("pct_of_compute_ceiling").value > 0);
    CHECK(c.metrics.at("pct_of_roofline").value > 0);
    CHECK(c.metrics.at("roofline_us_per_layer").value > 0);
  }
  CHECK(r.cases[0].metrics.at("gbps_no_dedup").value > 1e5);
}
