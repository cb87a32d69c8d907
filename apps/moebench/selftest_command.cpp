// `moebench selftest`: the mutation matrix. Each probe that has mutations runs clean and under
// each of its mutations, R times, each (probe, mutation) in its own child process so a
// mutation that poisons the CUDA context cannot spoil the next. A mutation is caught only when
// the checks named for it (probes/catch_plan.cpp) FAIL in every case it applies to, in every
// repetition; other failures are listed as collateral. A clean row passes only when every case
// PASSed with its forcing evidence (reports/verdict.cpp). The measurement probes (copy,
// bandwidth) join as clean rows, bandwidth under its mutation too; two-engine runs under both
// allocator modes. A row this machine cannot run (probes/selftest_plan.hpp) is listed with the
// reason and proves nothing. Exit 0 only when every row that ran is good.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "apps/moebench/child_process.hpp"
#include "apps/moebench/commands.hpp"
#include "apps/moebench/run_request.hpp"
#include "common/errors.hpp"
#include "engine/device.hpp"
#include "engine/fault_injection.hpp"
#include "engine/external/adapter_library.hpp"
#include "probes/adapter_requirements.hpp"
#include "probes/catch_plan.hpp"
#include "probes/selftest_plan.hpp"
#include "reports/environment.hpp"
#include "reports/report_writer.hpp"
#include "reports/table.hpp"
#include "reports/verdict.hpp"

namespace moe::cli {

namespace {

struct SelftestRequest {
  int reps = 5;
  std::string output = "moebench-selftest.json";
  int device = 0;
  std::string fixtures;
  std::string engine;  // --engine: the clean rows of the probes that run through this adapter
  std::vector<std::string> argv;
};

// Options that keep each probe quick inside the matrix; its checks are unchanged.
std::vector<std::string> quick_options(std::string_view probe) {
  std::vector<std::string> o{"--min-samples", "3", "--max-samples", "20", "--min-time", "0",
                             "--timeout", "10", "--no-kernel-timing"};
  if (probe == "capture-replay")
    o.insert(o.end(), {"--shape", "tiny", "--m", "4", "--weight-format", "bf16"});
  // tiny's step is far below 4x the L2: only the flush defeats it, which is what the mutation
  // hot-cache-timing takes away.
  if (probe == "bandwidth")
    o.insert(o.end(), {"--shape", "tiny", "--m", "4", "--weight-format", "bf16", "--mode", "eager"});
  // 1 GiB streams: still at least 8x the L2 of the GPUs moebench targets (the probe refuses
  // less), a quarter of the default's time.
  if (probe == "copy" || probe == "bandwidth") o.insert(o.end(), {"--copy-bytes", "1073741824"});
  // The window's properties only: the overhead gate is a timing of full-size shapes.
  if (probe == "route-telemetry")
    o.insert(o.end(), {"--shape", "tiny", "--m", "1,4", "--weight-format", "bf16", "--telemetry", "checks"});
  if (probe == "expert-residency") o.insert(o.end(), {"--shape", "tiny", "--m", "4", "--weight-format", "bf16"});
  return o;
}

// Worst verdict per repetition, for the table's counts.
struct Tally {
  int runs = 0, passed = 0, failed = 0, inconclusive = 0, errored = 0;
};

Tally tally(const std::vector<report::CaseResult>& cases, int reps) {
  std::map<int, report::Verdict> worst;
  for (const report::CaseResult& c : cases) {
    auto [it, inserted] = worst.try_emplace(report::repetition_of(c), c.verdict);
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

std::vector<std::string> first(const std::vector<std::string>& v, std::size_t n) {
  return {v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size()))};
}

int selftest(const SelftestRequest& req) {
  if (req.reps < 1 || req.reps > 1000)
    throw UsageError("--reps " + std::to_string(req.reps) + " is out of range: 1..1000");
  if (req.device < 0) throw UsageError("--device " + std::to_string(req.device) + " must be >= 0");
  // The adapter is checked before the device, as `run` checks it.
  std::unique_ptr<const external::AdapterLibrary> adapter;
  if (!req.engine.empty()) adapter = std::make_unique<const external::AdapterLibrary>(req.engine);
  std::string why;
  if (Device::count(&why) == 0) throw EnvironmentError("no usable CUDA GPU (" + why + ")");

  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-selftest-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  report::Report out;
  out.tool = report::tool_info();
  out.invocation = {{"argv", req.argv}, {"command", "selftest"}};
  out.environment = report::capture_environment(req.device);
  out.options = {{"reps", req.reps}, {"device", req.device}};
  if (adapter) out.options["engine_adapter"] = adapter->to_json();
  const report::ReportWriter writer(req.output);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::vector<std::string>> table{
      {"probe", "mutation", "allocator", "caught", "clean pass", "evidence", "collateral", "errors"}};
  bool all_good = true;

  std::function<std::string(const ProbeInfo&)> refusal;
  if (adapter) refusal = [&](const ProbeInfo& p) { return adapter_refusal(p, *adapter); };
  const std::vector<SelftestRow> plan = selftest_plan(Device::count(), refusal);
  std::vector<std::string> not_run;  // "probe (why): N rows", in plan order
  auto save = [&] {
    out.extra["selftest"] = {{"reps", req.reps}, {"rows", rows}, {"all_caught_and_clean", all_good},
                             {"rows_not_run", rows_not_run(plan)}};
    writer.write(out);
  };
  for (const SelftestRow& row : plan) {
    const bool clean = row.mutation == nullptr;
    const std::string mutation = clean ? "" : std::string(row.mutation->name);
    if (!row.not_run.empty()) {
      // Listed, never counted as caught or clean: the matrix says what it did not prove.
      rows.push_back({{"probe", row.probe},
                      {"mutation", clean ? nlohmann::json(nullptr) : nlohmann::json(mutation)},
                      {"allocator", row.allocator},
                      {"not_run", row.not_run}});
      table.push_back({row.probe, clean ? "(none)" : mutation, row.allocator, "not run", "not run", "-", "-", "-"});
      const std::string line = row.probe + " (" + row.not_run + ")";
      if (std::find(not_run.begin(), not_run.end(), line) == not_run.end()) not_run.push_back(line);
      continue;
    }
    const std::string tag = row.probe + (clean ? "" : "-" + mutation) + "-" + row.allocator;
    const std::string child_report = (dir / (tag + ".json")).string();
    // The child runs its repetitions in one process: it is the isolation already.
    std::vector<std::string> args{"run",        row.probe,     "--repeat",
                                  std::to_string(req.reps),   "-o",
                                  child_report, "--device",    std::to_string(req.device),
                                  "--allocator", row.allocator, "--in-process"};
    if (!req.fixtures.empty()) args.insert(args.end(), {"--fixtures", req.fixtures});
    if (!clean) args.insert(args.end(), {"--mutation", mutation});
    if (adapter) args.insert(args.end(), {"--engine", req.engine});
    for (const std::string& o : quick_options(row.probe)) args.push_back(o);
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
    std::vector<report::CaseResult> cases;
    if (std::filesystem::exists(child_report)) cases = report::load_report(child_report).cases;
    for (const auto& c : cases) out.cases.push_back(c);
    const Tally t = tally(cases, req.reps);
    const report::RowJudgement j = clean ? report::judge_clean_row(cases, req.reps)
                                         : report::judge_mutation_row(cases, row.target, req.reps);
    all_good = all_good && j.ok;
    nlohmann::json r = {{"probe", row.probe},
                        {"mutation", clean ? nlohmann::json(nullptr) : nlohmann::json(mutation)},
                        {"allocator", row.allocator},
                        {"runs", t.runs},
                        {"passed", t.passed},
                        {"failed", t.failed},
                        {"inconclusive", t.inconclusive},
                        {"errored", t.errored},
                        {"good_reps", j.good_reps},
                        {"missed", first(j.missed, 10)},
                        {"collateral_count", j.collateral.size()},
                        {"collateral", first(j.collateral, 10)},
                        {"child_exit_code", code},
                        {"ok", j.ok}};
    if (clean) {
      r["evidence"] = j.evidence;
    } else {
      r["cases"] = row.target.case_prefix.empty() ? "all" : row.target.case_prefix + "*";
      r["named_checks"] = row.target.checks;
    }
    rows.push_back(r);
    const std::string frac = std::to_string(j.good_reps) + "/" + std::to_string(j.reps);
    // Clean rows: pieces of required evidence proven over all their cases.
    int proven = 0, required = 0;
    for (const auto& [name, e] : j.evidence.items()) {
      proven += e.at("proven").get<int>();
      required += e.at("cases").get<int>();
    }
    table.push_back({row.probe, clean ? "(none)" : mutation, row.allocator, clean ? "-" : frac,
                     clean ? frac : "-",
                     clean ? std::to_string(proven) + "/" + std::to_string(required) : "-",
                     clean ? "-" : std::to_string(j.collateral.size()), std::to_string(j.errored)});
    for (const std::string& line : first(j.missed, 3))
      std::fprintf(stderr, "selftest:   missed: %s\n", line.c_str());
    save();  // after every row that ran: an interrupted matrix keeps what it proved
  }
  save();
  std::filesystem::remove_all(dir);
  std::printf("%s", report::format_columns(table).c_str());
  for (const std::string& line : not_run) std::printf("selftest: not run here: %s\n", line.c_str());
  const std::string unproven =
      not_run.empty() ? "" : "; " + std::to_string(rows_not_run(plan)) + " rows not run here (listed above), not proven";
  std::printf("%s%s\n",
              all_good ? "selftest: every mutation run caught by its named checks every time; every clean run passed "
                         "with its evidence"
                       : "selftest: FAILED (see the table and the report)",
              unproven.c_str());
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
  cmd->add_option("--fixtures", req->fixtures, kFixturesHelp);
  cmd->add_option("--engine", req->engine,
                  "Run the clean rows of the probes that run through this engine adapter "
                  "(docs/engine-abi.md); no mutation rows, which are moebench's own engine's")
      ->check(adapter_path());
  return {cmd, [req] { return selftest(*req); }};
}

}  // namespace moe::cli
