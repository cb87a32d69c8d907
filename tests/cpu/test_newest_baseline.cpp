// scripts/newest-baseline.sh: which committed baseline is current. Two baselines of one day are
// named DATE-COMMIT-PROBE, so their names order them by commit hash; the script orders them by
// the time their run started.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.hpp"

namespace {

using moe::test::quote;
using moe::test::run_shell;

std::string newest_baseline() {
  return quote((std::filesystem::path(MOEBENCH_FIXTURES_DIR).parent_path() / "scripts" /
                "newest-baseline.sh").string());
}

// A gzip'ed report holding only what the script reads.
// `file` ends in .gz: the JSON is written beside it without that suffix, and gzip replaces it.
void write_baseline(const std::filesystem::path& file, const std::string& started_at) {
  std::filesystem::path json = file;
  json.replace_extension();  // drops ".gz"
  std::ofstream(json) << R"({"invocation":{"started_at":")" << started_at << R"("},"cases":[]})";
  REQUIRE(run_shell("gzip -f " + quote(json.string())).exit_code == 0);
  REQUIRE(std::filesystem::exists(file));
}

}  // namespace

TEST_CASE("newest-baseline.sh: the run that started last, not the name that sorts last") {
  const auto root = moe::test::scratch_dir("newest-baseline");
  const auto gpu = root / "h200";
  std::filesystem::create_directories(gpu);
  // Same day: by name fff0000 sorts after 0000aaa, but 0000aaa's run started later.
  write_baseline(gpu / "2026-12-02-fff0000-bandwidth.json.gz", "2026-12-02T01:00:00Z");
  write_baseline(gpu / "2026-12-02-0000aaa-bandwidth.json.gz", "2026-12-02T02:00:00Z");
  write_baseline(gpu / "2026-12-01-1234567-bandwidth.json.gz", "2026-12-01T23:00:00Z");
  write_baseline(gpu / "2026-12-03-7654321-copy.json.gz", "2026-12-03T00:00:00Z");
  const std::string env = "MOEBENCH_BASELINES=" + quote(root.string()) + " ";

  const auto bandwidth = run_shell(env + newest_baseline() + " h200 bandwidth");
  CHECK(bandwidth.exit_code == 0);
  CHECK(bandwidth.out == (gpu / "2026-12-02-0000aaa-bandwidth.json.gz").string() + "\n");

  const auto copy = run_shell(env + newest_baseline() + " h200 copy");
  CHECK(copy.out == (gpu / "2026-12-03-7654321-copy.json.gz").string() + "\n");

  const auto none = run_shell(env + newest_baseline() + " h200 stages");
  CHECK(none.exit_code == 0);
  CHECK(none.out.empty());

  const auto usage = run_shell(newest_baseline() + " h200");
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.find("usage") != std::string::npos);
}
