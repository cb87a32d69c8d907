// Runs the probes of a request, in this process or one child process per probe, appending
// every case to the report (and rewriting its file) as it arrives. Ctrl-C stops between cases.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <fstream>

#include "apps/moebench/child_process.hpp"
#include "apps/moebench/probe_runner.hpp"
#include "common/cuda_check.hpp"
#include "common/log_tail.hpp"
#include "engine/device.hpp"
#include "probes/sweep_plan.hpp"
#include "reports/case_filter.hpp"
#include "reports/metadata.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::cli {

namespace {

// Set by SIGINT; checked after every case so the report on disk is always whole.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

class Interrupted : public Error {
 public:
  Interrupted() : Error(ExitCode::interrupted, "interrupted") {}
};

// "case i of n: KEY" as each declared case starts, numbered over the whole run: this run's own
// count, or the parent's when this is the child process of one probe.
struct Progress {
  int fd = STDERR_FILENO;
  std::size_t offset = 0;  // cases of the whole run before this run's first
  std::size_t total = 0;
  void started(std::size_t number_in_run, const SweepPoint& point) const {
    const std::string line = progress_line(offset + number_in_run, total,
                                           report::escape_terminal(point.key, report::kMaxLineChars));
    dprintf(fd, "%s\n", line.c_str());
  }
};

// What the probes measure with: opened only when a probe of the run needs a device.
struct DeviceContext {
  explicit DeviceContext(const RunOptions& options)
      : device(Device::open(options.device)),
        allocator(options.allocator),
        sampler(device, allocator, options.measure) {}
  Device device;
  DeviceAllocator allocator;
  measure::Sampler sampler;
};

// Runs the probes in this process, appending each case to `report` (and the file) at once.
void run_in_process(const std::vector<const ProbeInfo*>& probes, const RunOptions& options,
                    const SweepPlan& plan, const Progress& progress, report::Report& report,
                    const report::ReportWriter& writer) {
  // Probes that decide their cases as they run record only the cases --filter selects.
  std::optional<report::CaseKeyFilter> filter;
  if (!options.case_filter.empty()) filter.emplace(options.case_filter);
  std::optional<ScopedMutation> mutation;
  if (options.mutation) mutation.emplace(*options.mutation);
  std::optional<DeviceContext> gpu;
  for (const ProbeInfo* p : probes)
    if (p->needs_device && !gpu) gpu.emplace(options);

  bool context_poisoned = false;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const ProbeInfo& probe = *probes[i];
    for (int rep = 0; rep < options.repeat; ++rep) {
      const PlannedRun& planned = plan.runs[i * static_cast<std::size_t>(options.repeat) + rep];
      if (planned.declared && planned.points.empty()) continue;  // --filter left it nothing
      std::fprintf(stderr, "[%zu/%zu] %.*s%s\n", i + 1, probes.size(),
                   static_cast<int>(probe.name.size()), probe.name.data(),
                   options.repeat > 1 ? (" #" + std::to_string(rep)).c_str() : "");
      ProbeState::CaseSink sink = [&](report::CaseResult c) {
        if (!probe.sweep && filter && c.verdict != report::Verdict::error &&
            !filter->matches(c.key()))
          return;
        std::fprintf(stderr, "      %s %s\n", report::to_string(c.verdict).c_str(),
                     report::escape_terminal(c.key(), report::kMaxLineChars).c_str());
        report.cases.push_back(std::move(c));
        writer.write(report);  // nothing measured is lost if a later case dies
        if (g_interrupted.load()) throw Interrupted();
      };
      std::optional<ProbeState> state_storage;
      if (probe.needs_device)
        state_storage.emplace(std::string(probe.name), options, gpu->device, gpu->allocator,
                              gpu->sampler, std::move(sink), rep);
      else
        state_storage.emplace(std::string(probe.name), options, std::move(sink), rep);
      ProbeState& state = *state_storage;
      state.on_case_start([&](std::size_t index, const SweepPoint& point) {
        progress.started(planned.first + index + 1, point);
      });
      state.set_environment_sink([&](const std::string& key, nlohmann::json value) {
        report.environment[key] = std::move(value);
        writer.write(report);
      });
      if (context_poisoned && probe.needs_device) {
        report::CaseResult c = state.new_case("run");
        c.verdict = report::Verdict::error;
        c.reason = "not run: an earlier probe left a sticky CUDA error in this process";
        state.add_case(std::move(c));
        continue;
      }
      try {
        probe.run(state);
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        report::CaseResult c = state.new_case("run");
        c.verdict = report::Verdict::error;
        c.reason = e.what();
        // The machine, not the probe, failed (too little memory): exit 3 if nothing else did.
        if (const auto* me = dynamic_cast<const Error*>(&e); me && me->code() == ExitCode::environment)
          c.evidence["environment"] = true;
        if (const auto* ce = dynamic_cast<const CudaError*>(&e)) {
          c.evidence["cuda_error"] = cudaGetErrorName(ce->status());
          context_poisoned = ce->sticky();
        }
        state.add_case(std::move(c));
      }
    }
  }
}

// Runs each probe in a child moebench, so one probe's fatal CUDA error (which poisons its
// context for the rest of that process) or crash is recorded as that probe's error while the
// rest of the suite still runs. Cases come back through the child's report, which it rewrites
// after every case, so even a child that dies keeps what it measured.
void run_isolated(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                  const SweepPlan& plan, const Progress& progress, report::Report& report,
                  const report::ReportWriter& writer) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-run-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < probes.size() && !g_interrupted.load(); ++i) {
    const std::string name(probes[i]->name);
    std::fprintf(stderr, "[%zu/%zu] %s\n", i + 1, probes.size(), name.c_str());
    RunRequest child = request;
    child.probes = {name};
    child.in_process = true;
    child.quiet = true;
    child.output = (dir / (name + ".json")).string();
    // Its progress lines on this stderr, numbered within the whole run.
    constexpr int kProgressFd = 3;
    child.case_offset = progress.offset + plan.first_of(name);
    child.case_total = progress.total;
    child.progress_fd = kProgressFd;
    // The peer is probe bandwidth's: its child, run by name, keeps the default suite's choice.
    child.peer = name == "bandwidth" ? request.peer : "";
    child.peer_optional =
        name == "bandwidth" && request.peer.empty() && (request.probes.empty() || request.peer_optional);
    const std::string log = (dir / (name + ".log")).string();
    const int code = run_self(run_arguments(child), log, kProgressFd);
    std::size_t got = 0;
    bool complete = false;
    if (std::filesystem::exists(child.output)) {
      report::Report r;
      try {
        r = report::load_report(child.output);
      } catch (const UsageError& e) {
        // The child's report fails the loader's checks (reports/report_validation.hpp): an
        // error of that probe, with the file kept where the reason says, not a lost run.
        std::filesystem::path kept = request.output;
        kept += "." + name + ".refused.json";
        std::error_code ec;
        std::filesystem::copy_file(child.output, kept,
                                   std::filesystem::copy_options::overwrite_existing, ec);
        report::CaseResult c;
        c.probe = name;
        c.name = "process";
        c.seed = request.seed;
        c.verdict = report::Verdict::error;
        c.reason = std::string("the probe's report was refused: ") + e.what() +
                   (ec ? "" : " (kept as " + kept.string() + ")");
        report.cases.push_back(c);
        writer.write(report);
        continue;
      }
      complete = report::metadata_flag(r.invocation, "/complete", false);
      // The expert-parallel probes' per-rank environment comes back with their cases.
      if (r.environment.is_object() && r.environment.contains("ranks"))
        report.environment["ranks"] = r.environment["ranks"];
      for (const report::CaseResult& c : r.cases) {
        std::fprintf(stderr, "      %s %s\n", report::to_string(c.verdict).c_str(),
                     report::escape_terminal(c.key(), report::kMaxLineChars).c_str());
        report.cases.push_back(c);
        ++got;
      }
    }
    if (!complete && code != to_int(ExitCode::interrupted)) {
      report::CaseResult c;
      c.probe = name;
      c.name = "process";
      c.seed = request.seed;
      c.verdict = report::Verdict::error;
      c.reason = "the probe's process ended abnormally (exit code " + std::to_string(code) +
                 (code > 128 ? ", signal " + std::to_string(code - 128) : "") + ") after " +
                 std::to_string(got) + " cases: " + log_tail(log, 3);
      c.evidence = {{"exit_code", code}, {"log_tail", log_tail(log, 20)}};
      report.cases.push_back(c);
    } else if (code == to_int(ExitCode::usage) || (code == to_int(ExitCode::environment) && got == 0)) {
      throw Error(static_cast<ExitCode>(code), log_tail(log, 1));
    }
    // A child that recorded its environment error (too little device memory for a shape) has
    // its ERROR case, with the reason, in the report: the suite goes on, and the exit code
    // comes from the cases (exit_code_for).
    writer.write(report);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

void run_probes(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                const RunOptions& options, report::Report& report,
                const report::ReportWriter& writer) {
  g_interrupted.store(false);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  struct sigaction previous {};
  sigaction(SIGINT, &action, &previous);
  // The probes with a case to run: a declared probe that --filter leaves without one is not
  // started (nor its child process).
  std::vector<const ProbeInfo*> running;
  const SweepPlan all = plan_sweeps(probes, options);
  for (const ProbeInfo* p : probes)
    if (all.runs_probe(p->name)) running.push_back(p);
  const SweepPlan plan = plan_sweeps(running, options);
  Progress progress{request.progress_fd, request.case_offset,
                    request.case_total ? request.case_total : plan.total};
  try {
    if (request.in_process)
      run_in_process(running, options, plan, progress, report, writer);
    else
      run_isolated(request, running, plan, progress, report, writer);
  } catch (const Interrupted&) {
  }
  sigaction(SIGINT, &previous, nullptr);
}

bool interrupted() { return g_interrupted.load(); }

}  // namespace moe::cli
