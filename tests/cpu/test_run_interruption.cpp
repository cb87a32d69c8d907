// A run ended by a signal, or a process of it killed, keeps every case it finished: the real
// binary, its real runner (a child process per probe, or --in-process), stopped part way through
// the test-only probe test-ticks (a case every 20 ms on the host, no GPU; probes/probe.hpp).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Bounds on waiting for the run, far above what any of them takes: a run that hangs fails the
// test instead of hanging it. Nothing below asserts a duration.
constexpr auto kPatience = std::chrono::seconds(60);

// `moebench ARGS`, started in its own process group (so a signal to the group reaches the run
// and its children only), its stdout and stderr in `log`.
pid_t start_moebench(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> storage{moe::test::moebench_binary()};
  storage.insert(storage.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: the signal may come before the child ran setpgid
  return pid;
}

// The report on disk, or null while there is none (it is always whole: written by rename).
json read_report(const fs::path& report) {
  if (!fs::exists(report)) return nullptr;
  return json::parse(moe::test::read_text(report));
}

std::size_t cases_in(const json& report) {
  return report.is_object() && report.contains("cases") ? report.at("cases").size() : 0;
}

// Waits until the report on disk holds at least `n` cases; returns it.
json wait_for_cases(const fs::path& report, std::size_t n, pid_t run) {
  const auto until = Clock::now() + kPatience;
  for (;;) {
    json r = read_report(report);
    if (cases_in(r) >= n) return r;
    if (Clock::now() >= until) {
      ::kill(-run, SIGKILL);
      FAIL("the run did not write " << n << " cases to " << report.string());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The run's wait status once it ended.
int wait_for_end(pid_t run) {
  const auto until = Clock::now() + kPatience;
  for (;;) {
    int status = 0;
    if (::waitpid(run, &status, WNOHANG) == run) return status;
    if (Clock::now() >= until) {
      ::kill(-run, SIGKILL);
      ::waitpid(run, &status, 0);
      FAIL("the run did not end after the signal");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Whether process `pid` has ended: gone, or a zombie nobody has reaped yet.
bool ended(long long pid) {
  const std::string stat = moe::test::read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'Z';
}

bool ends_within_patience(long long pid) {
  const auto until = Clock::now() + kPatience;
  while (!ended(pid)) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Every case is one of test-ticks' finished cases, in order from the first.
void check_finished_ticks(const json& report, std::size_t count) {
  REQUIRE(cases_in(report) >= count);
  for (std::size_t i = 0; i < count; ++i) {
    const json& c = report.at("cases").at(i);
    CAPTURE(c.dump());
    CHECK(c.at("probe") == "test-ticks");
    CHECK(c.at("verdict") == "PASS");
    char name[32];
    std::snprintf(name, sizeof name, "tick-%04zu", i);
    CHECK(c.at("name") == name);
  }
}

}  // namespace

TEST_CASE("a stop signal leaves a whole report with every finished case, where it stopped, and 128 + the signal") {
  struct Stop {
    int signal;
    bool to_group;  // kill(-pgid): a terminal's Ctrl-C or hangup, timeout's second send
    bool in_process;
    const char* name;
    int exit_code;
  };
  const Stop stops[] = {
      {SIGTERM, false, false, "SIGTERM", 143},  // timeout, Slurm, docker stop: the run alone
      {SIGHUP, true, false, "SIGHUP", 129},
      {SIGINT, true, false, "SIGINT", 130},
      {SIGTERM, false, true, "SIGTERM", 143},
      {SIGHUP, false, true, "SIGHUP", 129},
  };
  const fs::path dir = moe::test::scratch_dir("stop-signal");
  for (const Stop& s : stops) {
    CAPTURE(s.name);
    CAPTURE(s.to_group);
    CAPTURE(s.in_process);
    const fs::path report = dir / (std::string(s.name) + (s.in_process ? "-in" : "-child") + ".json");
    const fs::path log = report.string() + ".log";
    std::vector<std::string> args{"run", "test-ticks", "-o", report.string()};
    if (s.in_process) args.push_back("--in-process");
    const pid_t run = start_moebench(args, log);
    const json before = wait_for_cases(report, 3, run);
    const long long measuring = before.at("cases").at(0).at("evidence").at("pid");
    CHECK((measuring == run) == s.in_process);
    ::kill(s.to_group ? -run : run, s.signal);
    const int status = wait_for_end(run);
    CAPTURE(moe::test::read_text(log));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == s.exit_code);

    const json r = read_report(report);
    const std::size_t n = cases_in(r);
    CHECK(n >= 3);
    CHECK(n < 2000);  // stopped part way
    check_finished_ticks(r, n);  // every finished case, the probe still running included
    const json& inv = r.at("invocation");
    CHECK(inv.at("complete") == false);
    CHECK(inv.at("interrupted") == true);
    const json& stop = inv.at("interruption");
    CHECK(stop.at("signal") == s.name);
    CHECK(stop.at("signal_number") == s.signal);
    CHECK(stop.at("exit_code") == s.exit_code);
    CHECK(stop.at("probe") == "test-ticks");
    CHECK(stop.at("probe_cases") == n);
    CHECK(stop.at("cases") == n);
    CHECK(stop.at("planned_cases") == 2000);
    CHECK(stop.at("at").is_string());
    CHECK(moe::test::read_text(log).find(std::string(s.name) + ": stopped; the partial report (" +
                                         std::to_string(n) + " cases) is in " + report.string()) !=
          std::string::npos);
    // The probe's process was stopped with the run, not left measuring.
    CHECK(ended(measuring));
  }
}

TEST_CASE("a probe's process killed with SIGKILL keeps its finished cases; the run records its error and goes on") {
  const fs::path dir = moe::test::scratch_dir("child-sigkill");
  const fs::path report = dir / "r.json";
  const pid_t run = start_moebench({"run", "test-ticks", "-o", report.string()}, dir / "log");
  const json before = wait_for_cases(report, 3, run);
  const long long child = before.at("cases").at(0).at("evidence").at("pid");
  REQUIRE(child != run);
  ::kill(static_cast<pid_t>(child), SIGKILL);  // as the kernel's OOM killer does
  const int status = wait_for_end(run);
  CAPTURE(moe::test::read_text(dir / "log"));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 4);  // a probe errored

  const json r = read_report(report);
  const std::size_t n = cases_in(r);
  REQUIRE(n >= 4);
  check_finished_ticks(r, n - 1);
  const json& last = r.at("cases").at(n - 1);
  CHECK(last.at("name") == "process");
  CHECK(last.at("verdict") == "ERROR");
  const std::string reason = last.at("reason");
  CHECK(reason.find("exit code 137, signal 9") != std::string::npos);
  CHECK(reason.find("after " + std::to_string(n - 1) + " cases") != std::string::npos);
  CHECK(r.at("invocation").at("complete") == true);
  CHECK_FALSE(r.at("invocation").contains("interruption"));
}

TEST_CASE("a run killed with SIGKILL leaves a whole report of the cases it had, and its probe's process stops") {
  const fs::path dir = moe::test::scratch_dir("run-sigkill");
  const fs::path report = dir / "r.json";
  const pid_t run = start_moebench({"run", "test-ticks", "-o", report.string()}, dir / "log");
  const json before = wait_for_cases(report, 3, run);
  const long long child = before.at("cases").at(0).at("evidence").at("pid");
  ::kill(run, SIGKILL);
  (void)wait_for_end(run);
  const json r = read_report(report);  // parses: whole
  check_finished_ticks(r, cases_in(r));
  CHECK(cases_in(r) >= 3);
  CHECK(r.at("invocation").at("complete") == false);
  // The probe's process is told by the kernel that its run died (SIGTERM), and stops, leaving
  // its own whole report in the run's temporary folder.
  CHECK(ends_within_patience(child));
  ::kill(-run, SIGKILL);  // nothing of the group may outlive the test, whatever happened
  const fs::path left = fs::temp_directory_path() / ("moebench-run-" + std::to_string(run));
  const json own = read_report(left / "test-ticks.json");
  CHECK(cases_in(own) >= cases_in(r));
  CHECK(own.at("invocation").at("interruption").at("signal") == "SIGTERM");
  fs::remove_all(left);
}
