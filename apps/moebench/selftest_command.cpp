// `moebench selftest`: the mutation matrix. Each probe that has mutations runs clean and under
// each of its mutations, R times, each (probe, mutation) in its own child process so a
// mutation that poisons the CUDA context cannot spoil the next. Exit 0 only when every mutation
// was caught every time and every clean run passed.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "apps/moebench/child_process.hpp"
#include "apps/moebench/commands.hpp"
#include "apps/moebench/run_request.hpp"
#include "common/errors.hpp"
#include "engine/device.hpp"
#include "engine/fault_injection.hpp"
#include "reports/environment.hpp"
#include "reports/report_writer.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {

struct SelftestRequest {
  int reps = 5;
  std::string output = "moebench-selftest.json";
  int device = 0;
  std::string fixtures;
  std::vector<std::string> argv;
};

// Options that keep each probe quick inside the matrix; its checks are unchanged.
std::vector<std::string> quick_options(std::string_view probe) {
  std::vector<std::string> o{"--min-samples", "3", "--max-samples", "20", "--min-time", "0",
                             "--timeout", "10", "--no-kernel-timing"};
  if (probe == "capture-replay")
    o.insert(o.end(), {"--shape", "tiny", "--m", "4", "--weight-format", "bf16"});
  // The window's properties only: the overhead gate is a timing of full-size shapes.
  if (probe == "route-telemetry")
    o.insert(o.end(), {"--shape", "tiny", "--m", "1,4", "--weight-format", "bf16", "--telemetry", "checks"});
  if (probe == "expert-residency") o.insert(o.end(), {"--shape", "tiny", "--m", "4", "--weight-format", "bf16"});
  return o;
}

// Outcome of one repetition: PASS only if all its cases passed; caught if any case failed.
struct Tally {
  int runs = 0, passed = 0, failed = 0, inconclusive = 0, errored = 0;
};

Tally tally(const report::Report& r, int reps) {
  std::map<std::string, report::Verdict> worst;  // rep suffix -> worst verdict
  for (const report::CaseResult& c : r.cases) {
    const auto hash = c.name.rfind('#');
    const std::string rep = hash == std::string::npos ? "0" : c.name.substr(hash + 1);
    auto [it, inserted] = worst.try_emplace(rep, c.verdict);
    if (!inserted && report::severity(c.verdict) > report::severity(it->second)) it->second = c.verdict;
  }
  Tally t;
  t.runs = reps;
  for (const auto& [rep, v] : worst) {
    if (v == report::Verdict::pass) ++t.passed;
    if (v == report::Verdict::fail) ++t.failed;
    if (v == report::Verdict::inconclusive) ++t.inconclusive;
    if (v == report::Verdict::error) ++t.errored;
  }
  t.errored += reps - static_cast<int>(worst.size());  // reps that left no case (a crash)
  return t;
}

int selftest(const SelftestRequest& req) {
  if (req.reps < 1 || req.reps > 1000)
    throw UsageError("--reps " + std::to_string(req.reps) + " is out of range: 1..1000");
  if (req.device < 0) throw UsageError("--device " + std::to_string(req.device) + " must be >= 0");
  std::string why;
  if (Device::count(&why) == 0) throw EnvironmentError("no usable CUDA GPU (" + why + ")");
  std::vector<std::string> probes;  // in mutation order, each once
  for (const MutationInfo& m : all_mutations())
    if (m.historic_bug && std::find(probes.begin(), probes.end(), m.probe) == probes.end())
      probes.emplace_back(m.probe);

  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-selftest-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  report::Report out;
  out.tool = report::tool_info();
  out.invocation = {{"argv", req.argv}, {"command", "selftest"}};
  out.environment = report::capture_environment(req.device);
  out.options = {{"reps", req.reps}, {"device", req.device}};
  const report::ReportWriter writer(req.output);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::vector<std::string>> table{{"probe", "mutation", "caught", "clean pass", "errors"}};
  bool all_good = true;

  for (const std::string& probe : probes) {
    std::vector<std::string> variants{""};
    for (const MutationInfo& m : all_mutations())
      if (m.historic_bug && m.probe == probe) variants.emplace_back(m.name);
    for (const std::string& mutation : variants) {
      const std::string tag = probe + (mutation.empty() ? "" : "-" + mutation);
      const std::string child_report = (dir / (tag + ".json")).string();
      // The child runs its repetitions in one process: it is the isolation already.
      std::vector<std::string> args{"run",    probe, "--repeat", std::to_string(req.reps),
                                    "-o",     child_report,      "--device",
                                    std::to_string(req.device),  "--in-process"};
      if (!req.fixtures.empty()) args.insert(args.end(), {"--fixtures", req.fixtures});
      if (!mutation.empty()) args.insert(args.end(), {"--mutation", mutation});
      for (const std::string& o : quick_options(probe)) args.push_back(o);
      std::fprintf(stderr, "selftest: %s x %d ...\n", tag.c_str(), req.reps);
      const int code = run_self(args, (dir / (tag + ".log")).string());
      if (code == to_int(ExitCode::environment) || code == to_int(ExitCode::usage)) {
        std::string log;
        if (FILE* f = std::fopen((dir / (tag + ".log")).c_str(), "r")) {
          char buf[512];
          while (std::fgets(buf, sizeof buf, f)) log += buf;
          std::fclose(f);
        }
        throw Error(static_cast<ExitCode>(code), "selftest child failed: " + log);
      }
      Tally t;
      t.runs = req.reps;
      t.errored = req.reps;
      if (std::filesystem::exists(child_report)) {
        const report::Report r = report::load_report(child_report);
        t = tally(r, req.reps);
        for (const auto& c : r.cases) out.cases.push_back(c);
      }
      const bool clean = mutation.empty();
      const bool good = clean ? t.passed == t.runs : t.failed == t.runs;
      all_good = all_good && good;
      rows.push_back({{"probe", probe},
                      {"mutation", clean ? nlohmann::json(nullptr) : nlohmann::json(mutation)},
                      {"runs", t.runs},
                      {"passed", t.passed},
                      {"failed", t.failed},
                      {"inconclusive", t.inconclusive},
                      {"errored", t.errored},
                      {"child_exit_code", code},
                      {"ok", good}});
      const std::string frac = std::to_string(clean ? t.passed : t.failed) + "/" + std::to_string(t.runs);
      table.push_back({probe, clean ? "(none)" : mutation, clean ? "-" : frac, clean ? frac : "-",
                       std::to_string(t.errored)});
      out.extra["selftest"] = {{"reps", req.reps}, {"rows", rows}, {"all_caught_and_clean", all_good}};
      writer.write(out);
    }
  }
  std::filesystem::remove_all(dir);
  std::printf("%s", report::format_columns(table).c_str());
  std::printf("%s\n", all_good ? "selftest: every mutation caught every time; every clean run passed"
                               : "selftest: FAILED (see the table and the report)");
  std::fprintf(stderr, "report: %s\n", req.output.c_str());
  return all_good ? to_int(ExitCode::ok) : to_int(ExitCode::check_failed);
}

}  // namespace

Command add_selftest_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto req = std::make_shared<SelftestRequest>();
  req->argv = argv;
  CLI::App* cmd = app.add_subcommand(
      "selftest", "Mutation matrix: every probe clean and under each of its mutations, R times");
  cmd->add_option("--reps", req->reps, "Runs per (probe, mutation); 50 for the full check")
      ->capture_default_str();
  cmd->add_option("-o,--output", req->output, "Report file (JSON)")->capture_default_str();
  cmd->add_option("--device", req->device, "CUDA device index")->capture_default_str();
  cmd->add_option("--fixtures", req->fixtures, "Folder with shapes/ and cases/");
  return {cmd, [req] { return selftest(*req); }};
}

}  // namespace moe::cli
