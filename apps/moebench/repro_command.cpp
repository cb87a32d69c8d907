// `moebench repro FILE`: reruns a case file or a report on this GPU, writes a new report that
// holds both environments (extra.repro) and says whether each verdict reproduced.
// Exit codes: 0 every verdict reproduced; 1 one did not; 2 the file cannot be rerun (bad input,
// newer schema, unknown probe or mutation); 3 no GPU.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "apps/moebench/commands.hpp"
#include "apps/moebench/repro_plan.hpp"
#include "apps/moebench/run_request.hpp"
#include "common/errors.hpp"
#include "reports/report_writer.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {

struct ReproRequest {
  std::string file;
  std::string output = "moebench-repro.json";
  std::string fixtures;
  int device = 0;
  std::string engine;  // --engine: the adapter every run goes through
  bool dry_run = false;
  std::vector<std::string> argv;
};

// A private folder for shape files written from recorded shape objects; removed on exit.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("moebench-repro-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

int repro(const ReproRequest& req) {
  if (req.output.empty()) throw UsageError("--output must name a file");
  const TempDir shape_dir;
  ReproPlan plan = make_repro_plan(req.file, shape_dir.path(), req.fixtures, req.device, req.engine);
  for (const std::string& w : plan.warnings) std::fprintf(stderr, "repro: warning: %s\n", w.c_str());
  for (const RunRequest& r : plan.runs) {  // every run checked before anything is printed
    std::vector<const ProbeInfo*> probes;
    resolve_run_options(r, probes);
  }

  std::fprintf(stderr, "repro: %s (%s), %zu run(s)\n", plan.source.c_str(),
               plan.source_kind.c_str(), plan.runs.size());
  for (const std::string& d : plan.run_descriptions) std::fprintf(stderr, "  %s\n", d.c_str());
  if (req.dry_run) {
    std::vector<std::vector<std::string>> rows{{"case", "expected"}};
    for (const ExpectedVerdict& e : plan.expected)
      rows.push_back({e.key, report::to_string(e.verdict)});
    std::printf("%s", report::format_columns(rows).c_str());
    return to_int(ExitCode::ok);
  }

  // One run per mutation; each writes its own partial file, merged into --output at the end.
  report::Report merged;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    RunRequest& r = plan.runs[i];
    r.argv = req.argv;
    r.output = plan.runs.size() == 1 ? req.output : req.output + ".run" + std::to_string(i + 1);
    report::Report part = execute_run(r);
    if (i == 0) {
      merged = std::move(part);
    } else {
      for (report::CaseResult& c : part.cases) merged.cases.push_back(std::move(c));
      std::filesystem::remove(r.output);
    }
  }

  // Compare verdicts: per case key for a report; the run's worst verdict for a case file.
  nlohmann::json verdicts = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows{{"case", "expected", "got", "reproduced"}};
  std::size_t reproduced = 0;
  for (const ExpectedVerdict& e : plan.expected) {
    std::string got = "missing";
    if (plan.compare_overall) {
      got = report::to_string(merged.overall());
    } else {
      for (const report::CaseResult& c : merged.cases)
        // A source report from before shape fingerprints has keys without them.
        if (c.key() == e.key || c.key(false) == e.key) got = report::to_string(c.verdict);
    }
    const bool same = got == report::to_string(e.verdict);
    reproduced += same;
    verdicts.push_back({{"key", e.key},
                        {"expected", report::to_string(e.verdict)},
                        {"got", got},
                        {"reproduced", same}});
    rows.push_back({e.key, report::to_string(e.verdict), got, same ? "yes" : "NO"});
  }
  const bool all = reproduced == plan.expected.size();
  merged.extra["repro"] = {{"source", plan.source},
                           {"source_kind", plan.source_kind},
                           {"source_document", plan.source_document},
                           {"runs", plan.run_descriptions},
                           {"verdicts", verdicts},
                           {"reproduced", all}};
  report::ReportWriter(req.output).write(merged);

  std::printf("%s", report::format_columns(rows).c_str());
  std::printf("%zu of %zu verdict(s) reproduced; report: %s\n", reproduced, plan.expected.size(),
              req.output.c_str());
  return all ? to_int(ExitCode::ok) : to_int(ExitCode::check_failed);
}

}  // namespace

Command add_repro_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto r = std::make_shared<ReproRequest>();
  r->argv = argv;
  CLI::App* cmd = app.add_subcommand(
      "repro",
      "Rerun a case file or a report on this GPU and say whether each verdict reproduced; "
      "exits 1 when one did not");
  cmd->add_option("file", r->file, "A case file (fixtures/cases/*.json) or a moebench report")
      ->required();
  cmd->add_option("-o,--output", r->output,
                  "New report (JSON) with both environments in extra.repro")
      ->capture_default_str();
  cmd->add_option("--device", r->device, "CUDA device index")->capture_default_str();
  cmd->add_option("--fixtures", r->fixtures, kFixturesHelp);
  cmd->add_option("--engine", r->engine,
                  "Rerun through this engine adapter (docs/engine-abi.md); a report that ran "
                  "through one needs it")
      ->check(adapter_path());
  cmd->add_flag("--dry-run", r->dry_run,
                "Validate FILE and print what would run and the expected verdicts; run nothing");
  return {cmd, [r] { return repro(*r); }};
}

}  // namespace moe::cli
