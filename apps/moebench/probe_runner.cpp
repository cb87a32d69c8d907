// Runs the probes of a request, in this process or one child process per probe, adding every
// case to the report (and rewriting its file) as soon as it is finished.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "apps/moebench/child_process.hpp"
#include "apps/moebench/probe_runner.hpp"
#include "common/cuda_check.hpp"
#include "common/log_tail.hpp"
#include "engine/device.hpp"
#include "probes/sweep_plan.hpp"
#include "reports/case_filter.hpp"
#include "reports/run_events.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::cli {

namespace {

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

void print_case(const report::CaseResult& c) {
  std::fprintf(stderr, "      %s %s\n", report::to_string(c.verdict).c_str(),
               report::escape_terminal(c.key(), report::kMaxLineChars).c_str());
}

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

// Runs the probes in this process, adding each case to `report` (and the file) at once.
void run_in_process(const std::vector<const ProbeInfo*>& probes, const RunOptions& options,
                    const SweepPlan& plan, const Progress& progress, LiveReport& report) {
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
    report.start_probe(std::string(probe.name));
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
        print_case(c);
        report.add_case(std::move(c));
      };
      std::optional<ProbeState> state;
      if (probe.needs_device)
        state.emplace(std::string(probe.name), options, gpu->device, gpu->allocator, gpu->sampler,
                      std::move(sink), rep);
      else
        state.emplace(std::string(probe.name), options, std::move(sink), rep);
      state->on_case_start([&](std::size_t index, const SweepPoint& point) {
        progress.started(planned.first + index + 1, point);
      });
      state->set_environment_sink([&](const std::string& key, nlohmann::json value) {
        report.set_environment(key, std::move(value));
      });
      if (context_poisoned && probe.needs_device) {
        report::CaseResult c = state->new_case("run");
        c.verdict = report::Verdict::error;
        c.reason = "not run: an earlier probe left a sticky CUDA error in this process";
        state->add_case(std::move(c));
        continue;
      }
      try {
        probe.run(*state);
      } catch (const std::exception& e) {
        report::CaseResult c = state->new_case("run");
        c.verdict = report::Verdict::error;
        c.reason = e.what();
        // The machine, not the probe, failed (too little memory): exit 3 if nothing else did.
        if (const auto* me = dynamic_cast<const Error*>(&e); me && me->code() == ExitCode::environment)
          c.evidence["environment"] = true;
        if (const auto* ce = dynamic_cast<const CudaError*>(&e)) {
          c.evidence["cuda_error"] = cudaGetErrorName(ce->status());
          context_poisoned = ce->sticky();
        }
        state->add_case(std::move(c));
      }
    }
    report.end_probe();
  }
}

// The "process" ERROR case of a probe whose child did not finish its run.
report::CaseResult process_error(const std::string& probe, std::uint64_t seed, std::string reason) {
  report::CaseResult c;
  c.probe = probe;
  c.name = "process";
  c.seed = seed;
  c.verdict = report::Verdict::error;
  c.reason = std::move(reason);
  return c;
}

// Runs each probe in a child moebench, so one probe's fatal CUDA error (which poisons its
// context for the rest of that process) or crash is recorded as that probe's error while the
// rest of the suite still runs. Cases come back as the child finishes them, through a pipe
// (report::RunEventWriter), and go into the report at once: a child that dies, is killed or is
// stopped by a signal keeps every case it finished.
void run_isolated(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                  const SweepPlan& plan, const Progress& progress, LiveReport& report,
                  const StopSignals& stop) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-run-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < probes.size() && !stop.received(); ++i) {
    const std::string name(probes[i]->name);
    std::fprintf(stderr, "[%zu/%zu] %s\n", i + 1, probes.size(), name.c_str());
    RunRequest child = request;
    child.probes = {name};
    child.in_process = true;
    child.quiet = true;
    child.output = (dir / (name + ".json")).string();
    // Its progress lines on this stderr, numbered within the whole run; its cases on a pipe.
    constexpr int kProgressFd = 3, kEventFd = 4;
    child.case_offset = progress.offset + plan.first_of(name);
    child.case_total = progress.total;
    child.progress_fd = kProgressFd;
    child.event_fd = kEventFd;
    // The peer is probe bandwidth's: its child, run by name, keeps the default suite's choice.
    child.peer = name == "bandwidth" ? request.peer : "";
    child.peer_optional =
        name == "bandwidth" && request.peer.empty() && (request.probes.empty() || request.peer_optional);
    const std::string log = (dir / (name + ".log")).string();

    report.start_probe(name);
    std::size_t got = 0;
    bool complete = false;
    auto on_event = [&](std::string_view line) {
      try {
        report::RunEvent e = report::parse_run_event(line, got);
        switch (e.kind) {
          case report::RunEvent::Kind::case_result:
            print_case(e.case_result);
            report.add_case(std::move(e.case_result));
            ++got;
            break;
          case report::RunEvent::Kind::environment:
            report.set_environment(e.key, std::move(e.value));
            break;
          case report::RunEvent::Kind::complete: complete = true; break;
        }
      } catch (const UsageError& e) {
        // A case the report loader would refuse (reports/report_validation.hpp): an error of
        // that probe, with the line kept where the reason says, not a lost run.
        std::filesystem::path kept = request.output;
        kept += "." + name + ".refused.json";
        std::ofstream(kept, std::ios::app) << line << '\n';
        report.add_case(process_error(name, request.seed,
                                      std::string("the probe's process sent a case that was "
                                                  "refused: ") + e.what() + " (kept in " +
                                          kept.string() + ")"));
      }
    };
    auto on_stop = [&](int signal) { report.record_interruption(signal); };
    const ChildEnd end = run_self_streaming(run_arguments(child), log, kProgressFd, kEventFd,
                                            stop, on_event, on_stop);
    const int code = end.exit_code;
    if (stop.received()) {
      // The run is stopping: the child was stopped with it (or by the same signal, sent to the
      // whole process group). Its finished cases are in; the caller records where it stopped
      // (between probes when this one had finished).
      if (complete) report.end_probe();
      if (end.killed)
        std::fprintf(stderr, "moebench: probe %s did not stop within %llds of %s: killed%s\n",
                     name.c_str(), static_cast<long long>(kStopGrace.count()),
                     signal_name(stop.received()).c_str(),
                     end.reaped ? "" : " (and still not ended: left behind)");
      report.record_interruption(stop.received());
      break;
    }
    if (!complete) {
      report::CaseResult c = process_error(
          name, request.seed,
          "the probe's process ended abnormally (exit code " + std::to_string(code) +
              (code > 128 ? ", signal " + std::to_string(code - 128) : "") + ") after " +
              std::to_string(got) + " cases: " + log_tail(log, 3));
      c.evidence = {{"exit_code", code}, {"log_tail", log_tail(log, 20)}};
      report.add_case(std::move(c));
    } else if (code == to_int(ExitCode::usage) || (code == to_int(ExitCode::environment) && got == 0)) {
      throw Error(static_cast<ExitCode>(code), log_tail(log, 1));
    }
    // A child that recorded its environment error (too little device memory for a shape) has
    // its ERROR case, with the reason, in the report: the suite goes on, and the exit code
    // comes from the cases (exit_code_for).
    report.end_probe();
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace

void run_probes(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                const RunOptions& options, LiveReport& report, const StopSignals& stop) {
  // The probes with a case to run: a declared probe that --filter leaves without one is not
  // started (nor its child process).
  std::vector<const ProbeInfo*> running;
  const SweepPlan all = plan_sweeps(probes, options);
  for (const ProbeInfo* p : probes)
    if (all.runs_probe(p->name)) running.push_back(p);
  const SweepPlan plan = plan_sweeps(running, options);
  Progress progress{request.progress_fd, request.case_offset,
                    request.case_total ? request.case_total : plan.total};
  report.set_planned_cases(progress.total);
  if (request.in_process)
    run_in_process(running, options, plan, progress, report);
  else
    run_isolated(request, running, plan, progress, report, stop);
}

}  // namespace moe::cli
