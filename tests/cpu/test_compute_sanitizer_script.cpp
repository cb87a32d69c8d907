// scripts/compute-sanitizer.sh, run against stand-ins for compute-sanitizer and a doctest
// binary (shell scripts), so its split by test case, its variants, its reading of the tools'
// logs (errors, racecheck hazards, a killed run, a timeout) and its deadline are checked
// without a GPU.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using moe::test::quote;
using moe::test::read_text;
using moe::test::run_shell;

void write_executable(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all);
}

// A bundle folder: moebench (its --version only), test_fake (two test cases; a run prints its
// arguments, MOE_TEST_PART and MOE_TEST_REPEAT, sleeps FAKE_SLEEP seconds, exits FAKE_EXIT)
// and a sanitizer that runs the command and writes the tail a real racecheck run writes, with
// FAKE_HAZARDS hazards and FAKE_ERRORS errors.
fs::path fake_bundle(const fs::path& dir) {
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  write_executable(bin / "moebench", "#!/bin/sh\necho 'moebench 0.0.0 (fake)'\n");
  write_executable(bin / "test_fake",
                   "#!/bin/sh\n"
                   "for a; do if [ \"$a\" = --list-test-cases ]; then\n"
                   "  echo '[doctest] doctest version is \"2.4.9\"'\n"
                   "  echo '==============================================================================='\n"
                   "  echo 'case one, with a comma'\n"
                   "  echo 'case two'\n"
                   "  echo '==============================================================================='\n"
                   "  echo '[doctest] unskipped test cases passing the current filters: 2'\n"
                   "  exit 0\n"
                   "fi; done\n"
                   "echo \"args: $*\"\n"
                   "echo \"part: ${MOE_TEST_PART:-none}\"\n"
                   "echo \"repeat: ${MOE_TEST_REPEAT-unset}\"\n"
                   "[ -n \"$FAKE_SLEEP\" ] && sleep \"$FAKE_SLEEP\"\n"
                   "exit ${FAKE_EXIT:-0}\n");
  write_executable(bin / "fake-sanitizer",
                   "#!/bin/sh\n"
                   "[ \"$1\" = --version ] && { echo 'fake sanitizer Version 0.0'; exit 0; }\n"
                   // Refuses an option as compute-sanitizer 2025.3 does, before any target runs.
                   "for a; do [ \"$a\" = --filter ] && { echo \"unrecognised option '--filter'\"; exit 255; }; done\n"
                   "echo \"sanitizer arguments: $*\"\n"
                   "while [ $# -gt 0 ]; do case $1 in\n"
                   "  --*) shift 2 ;;\n"
                   "  *) break ;; esac; done\n"
                   "\"$@\"; rc=$?\n"
                   "[ $rc -ne 0 ] && echo \"========= Error: process didn't terminate successfully\"\n"
                   "echo \"========= ERROR SUMMARY: ${FAKE_ERRORS:-0} errors\"\n"
                   "echo \"========= RACECHECK SUMMARY: ${FAKE_HAZARDS:-0} hazards displayed (0 errors, "
                   "${FAKE_HAZARDS:-0} warnings)\"\n"
                   "[ \"${FAKE_ERRORS:-0}\" -gt 0 ] && exit 99\n"
                   "exit $rc\n");
  return bin;
}

std::string script() {
  return quote((fs::path(MOEBENCH_FIXTURES_DIR).parent_path() / "scripts" / "compute-sanitizer.sh").string());
}

struct ScriptRun {
  int exit_code = -1;
  std::string err;
  std::string summary;  // out/summary.md, "" when none was written
};

// The script on a fake bundle in `dir` with racecheck and no probes, `settings` before it.
ScriptRun run_script(const fs::path& dir, const std::string& settings) {
  const fs::path bin = fake_bundle(dir);
  const auto cli = run_shell("env COMPUTE_SANITIZER=" + quote((bin / "fake-sanitizer").string()) +
                             " MOEBENCH_SANITIZER_TOOLS=racecheck MOEBENCH_SANITIZER_PROBES=none"
                             " MOEBENCH_SANITIZER_TESTS=test_fake MOEBENCH_SANITIZER_OUT=" +
                             quote((dir / "out").string()) + " " + settings + " " + script() + " " +
                             quote(bin.string()));
  return {cli.exit_code, cli.err, read_text(dir / "out" / "summary.md")};
}

}  // namespace

TEST_CASE("compute-sanitizer.sh: a run a test case and variant, each read from its log") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script");
  const auto r = run_script(dir, "MOEBENCH_SANITIZER_JOBS=3 MOEBENCH_SANITIZER_VARIANTS=" +
                                     quote("MOE_TEST_PART=1/2 MOE_TEST_PART=2/2+FAKE_HAZARDS=2\n"
                                           "  FAKE_EXIT=9 FAKE_ERRORS=1"));
  INFO(r.err);
  INFO(r.summary);
  CHECK(r.exit_code == 1);  // not every run was clean
  // Rows in the order asked for, whichever finished first: case, then variant.
  const char* rows[] = {
      "| racecheck | test_fake-1-v1 | CLEAN | 0 | 0 | 0 |",
      "| racecheck | test_fake-1-v2 | HAZARDS | 0 | 2 | 0 |",
      "| racecheck | test_fake-1-v3 | KILLED (signal 9: the host out of memory?) | 0 | 0 | 9 |",
      "| racecheck | test_fake-1-v4 | ERRORS | 1 | 0 | 99 |",
      "| racecheck | test_fake-2-v1 | CLEAN | 0 | 0 | 0 |",
      "| racecheck | test_fake-2-v2 | HAZARDS | 0 | 2 | 0 |",
  };
  std::size_t at = 0;
  for (const char* row : rows) {
    CAPTURE(row);
    const std::size_t found = r.summary.find(row, at);
    REQUIRE(found != std::string::npos);
    at = found;
  }
  CHECK(r.summary.find("- v2: MOE_TEST_PART=2/2 FAKE_HAZARDS=2") != std::string::npos);
  CHECK(r.summary.find("- test_fake-1: case one, with a comma") != std::string::npos);
  // Each run names its one case (its comma a '?': doctest splits filters on commas) and sees
  // its variant's variables.
  const std::string log = read_text(dir / "out" / "racecheck-test_fake-1-v2.log");
  CHECK(log.find("--test-case=case one? with a comma") != std::string::npos);
  CHECK(log.find("part: 2/2") != std::string::npos);
  CHECK(read_text(dir / "out" / "racecheck-test_fake-2-v1.log").find("part: 1/2") != std::string::npos);
}

TEST_CASE("compute-sanitizer.sh: the forward tests' repeat run is left out unless asked for") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script-repeat");
  const auto r = run_script(dir, "MOEBENCH_SANITIZER_VARIANTS=" + quote("MOE_TEST_PART=1/1 MOE_TEST_REPEAT=1"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.summary.find("MOE_TEST_M=1,2,3,5,64; MOE_TEST_REPEAT=0\n") != std::string::npos);
  CHECK(read_text(dir / "out" / "racecheck-test_fake-1-v1.log").find("repeat: 0\n") != std::string::npos);
  CHECK(read_text(dir / "out" / "racecheck-test_fake-1-v2.log").find("repeat: 1\n") != std::string::npos);
  const auto asked = run_script(moe::test::scratch_dir("sanitizer-script-repeat-asked"), "MOE_TEST_REPEAT=1");
  CHECK(asked.summary.find("; MOE_TEST_REPEAT=1\n") != std::string::npos);
}

TEST_CASE("compute-sanitizer.sh: every run clean is exit 0") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script-clean");
  const auto r = run_script(dir, "MOEBENCH_SANITIZER_JOBS=2");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (const char* row : {"| racecheck | test_fake-1 | CLEAN |", "| racecheck | test_fake-2 | CLEAN |"})
    CHECK_MESSAGE(r.summary.find(row) != std::string::npos, row);
}

TEST_CASE("compute-sanitizer.sh: more sanitizer options reach every run and the summary") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script-args");
  const auto r =
      run_script(dir, "MOEBENCH_SANITIZER_ARGS=" + quote("--kernel-name kns=route  --kernel-name-exclude kns=cluster"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.summary.find("- compute-sanitizer options: --kernel-name kns=route --kernel-name-exclude kns=cluster\n") !=
        std::string::npos);
  for (const char* log : {"racecheck-test_fake-1.log", "racecheck-test_fake-2.log"}) {
    CAPTURE(log);
    const std::string text = read_text(dir / "out" / log);
    CHECK(text.find("--print-limit 200 --kernel-name kns=route --kernel-name-exclude kns=cluster ") !=
          std::string::npos);
  }
  const auto plain = run_script(moe::test::scratch_dir("sanitizer-script-no-args"), "");
  CHECK(plain.summary.find("- compute-sanitizer options: (none: every kernel launch checked)") != std::string::npos);
}

TEST_CASE("compute-sanitizer.sh: options the tool refuses are exit 2 before any run, its reason named") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script-refused-args");
  const auto r = run_script(dir, "MOEBENCH_SANITIZER_ARGS=" + quote("--filter kns=route"));
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("MOEBENCH_SANITIZER_ARGS='--filter kns=route': racecheck refused them: unrecognised option "
                   "'--filter'") != std::string::npos);
  CHECK(r.summary.empty());
}

TEST_CASE("compute-sanitizer.sh: a deadline stops the run in progress and lists the rest as not run") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script-deadline");
  const auto r = run_script(dir, "FAKE_SLEEP=60 MOEBENCH_SANITIZER_DEADLINE=12");
  INFO(r.err);
  INFO(r.summary);
  CHECK(r.exit_code == 1);
  CHECK(r.summary.find("| racecheck | test_fake-1 | TIMEOUT |") != std::string::npos);
  CHECK(r.summary.find("| racecheck | test_fake-2 | NOT RUN (deadline) |") != std::string::npos);
}

TEST_CASE("compute-sanitizer.sh: bad settings name the value") {
  const fs::path dir = moe::test::scratch_dir("sanitizer-script-usage");
  const auto bad_variant = run_script(dir, "MOEBENCH_SANITIZER_VARIANTS=" + quote("MOE_TEST_M=1 not-a-variant"));
  CHECK(bad_variant.exit_code == 2);
  CHECK(bad_variant.err.find("'not-a-variant' is not VAR=VALUE") != std::string::npos);
  CHECK(bad_variant.summary.empty());  // refused before anything ran
  const auto tool_in_args = run_script(dir, "MOEBENCH_SANITIZER_ARGS=" + quote("--tool memcheck"));
  CHECK(tool_in_args.exit_code == 2);
  CHECK(tool_in_args.err.find("'--tool' is set by MOEBENCH_SANITIZER_TOOLS") != std::string::npos);
  const auto bad_jobs = run_script(dir, "MOEBENCH_SANITIZER_JOBS=0");
  CHECK(bad_jobs.exit_code == 2);
  CHECK(bad_jobs.err.find("MOEBENCH_SANITIZER_JOBS='0'") != std::string::npos);
  const auto no_tool = run_shell("env COMPUTE_SANITIZER=/nonexistent/compute-sanitizer " + script() + " " +
                                 quote((dir / "bin").string()));
  CHECK(no_tool.exit_code == 3);
  CHECK(no_tool.err.find("compute-sanitizer not found") != std::string::npos);
}
