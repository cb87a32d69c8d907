// scripts/engine-ab.sh: the same-machine A/B driver, run against a stand-in for moebench (a
// shell script that writes a one-case report), so its round order, environment switches, table
// and usage errors are checked without a GPU.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.hpp"

namespace {

using moe::test::quote;
using moe::test::run_shell;

std::string engine_ab() {
  return quote((std::filesystem::path(MOEBENCH_FIXTURES_DIR).parent_path() / "scripts" / "engine-ab.sh").string());
}

// A moebench stand-in: logs "$FAKE_NAME" per call and writes a report whose one case's median
// is $FAKE_US plus the number of calls before it (so every round differs).
std::filesystem::path fake_moebench(const std::filesystem::path& dir) {
  const auto path = dir / "fake-moebench";
  const auto log = (dir / "calls.log").string();
  std::ofstream(path) << "#!/bin/sh\n"
                      << "out=''; while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                      << "n=$(cat " << quote(log) << " 2>/dev/null | wc -l)\n"
                      << "echo \"$FAKE_NAME\" >> " << quote(log) << "\n"
                      << "printf '{\"cases\":[{\"key\":\"bandwidth/step/x\",\"verdict\":\"%s\",\"measurements\":"
                         "{\"main\":{\"gpu_time_us\":{\"median\":%s}}}}]}' \"${FAKE_VERDICT:-PASS}\" "
                         "\"$((FAKE_US + n))\" > \"$out\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace

TEST_CASE("engine-ab.sh: rounds interleaved, each configuration's switches, the medians and the change") {
  const auto dir = moe::test::scratch_dir("engine-ab");
  const std::string fake = fake_moebench(dir).string();
  const auto r = run_shell(engine_ab() + " -r 2 -d " + quote((dir / "ab").string()) +  //
                           " -c " + quote("a=" + fake + ",FAKE_NAME=a,FAKE_US=10") +     //
                           " -c " + quote("b=" + fake + ",FAKE_NAME=b,FAKE_US=20,FAKE_VERDICT=FAIL") +
                           " -- bandwidth --shape tiny");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Round 1 of every configuration, then round 2: a b a b.
  CHECK(moe::test::read_text(dir / "calls.log") == "a\nb\na\nb\n");
  for (const char* report : {"a-1.json", "a-2.json", "b-1.json", "b-2.json"})
    CHECK_MESSAGE(std::filesystem::exists(dir / "ab" / report), report);
  CHECK(r.out.find("| case | a | b | b vs a |") != std::string::npos);
  // a: 10 + 0, 10 + 2; b: 20 + 1, 20 + 3, marked; median 22 against 11.
  CHECK(r.out.find("| bandwidth/step/x | 10.0 12.0 | 21.0 23.0 (not PASS) | +11.0 |") != std::string::npos);

  // -s prints the same table again from the reports, nothing run.
  const auto again = run_shell(engine_ab() + " -s " + quote((dir / "ab").string()) + " -c a -c b");
  CHECK(again.exit_code == 0);
  CHECK(again.out == r.out);
  CHECK(moe::test::read_text(dir / "calls.log") == "a\nb\na\nb\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("engine-ab.sh: bad usage exits 2 naming the bad value") {
  const auto dir = moe::test::scratch_dir("engine-ab-usage");
  const std::string fake = fake_moebench(dir).string();
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"-- bandwidth", "no configuration"},
      {"-c " + quote("a=" + fake) + " -r 0 -- bandwidth", "-r '0' is not valid"},
      {"-c " + quote("a=" + fake) + " -c " + quote("a=" + fake) + " -- bandwidth", "the name 'a' is given twice"},
      {"-c " + quote("a b=" + fake) + " -- bandwidth", "-c 'a b="},
      {"-c a=/nonexistent/moebench -- bandwidth", "no moebench binary at '/nonexistent/moebench'"},
      {"-c " + quote("a=" + fake) + " --", "no RUN_ARGS"},
      {"-c " + quote("a=" + fake) + " -- bandwidth -o x.json", "'-o': each run writes its own report"},
      {"-s /nonexistent/folder", "-s '/nonexistent/folder': no such folder"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_shell(engine_ab() + " -d " + quote((dir / "ab").string()) + " " + c.args);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
  }
  CHECK_FALSE(std::filesystem::exists(dir / "calls.log"));  // nothing ran
  std::filesystem::remove_all(dir);
}
