#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <set>

#include "apps/moebench/child_process.hpp"
#include "apps/moebench/commands.hpp"
#include "apps/moebench/run_request.hpp"
#include "common/cuda_check.hpp"
#include "common/errors.hpp"
#include "engine/device.hpp"
#include "probes/probe.hpp"
#include "reports/environment.hpp"
#include "reports/report_writer.hpp"
#include "reports/table.hpp"

namespace moe::cli {

namespace {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

kernels::WeightFormat parse_weight_format(const std::string& s) {
  if (s == "bf16") return kernels::WeightFormat::bf16;
  if (s == "int4") return kernels::WeightFormat::int4;
  throw UsageError("--weight-format '" + s + "' is not valid; valid: bf16, int4");
}

// Checks every input and resolves names to objects, before any device is touched.
RunOptions resolve_run_options(const RunRequest& r, std::vector<const ProbeInfo*>& probes) {
  if (r.probes.empty()) {
    for (const ProbeInfo& p : all_probes())
      if (p.in_default_suite) probes.push_back(&p);
  } else {
    std::set<std::string> seen;
    for (const std::string& name : r.probes) {
      const ProbeInfo& p = probe_by_name(name);
      if (seen.insert(name).second) probes.push_back(&p);
    }
  }
  RunOptions o;
  o.fixtures_dir = fixtures_dir(r.fixtures);
  if (!r.shapes.empty()) {
    const auto library = load_shape_library(std::filesystem::path(o.fixtures_dir) / "shapes");
    for (const std::string& s : r.shapes) o.shapes.push_back(resolve_shape(s, library));
    o.user_set_shapes = true;
  }
  for (int m : r.ms)
    if (m < 1 || m > 65536)
      throw UsageError("--m " + std::to_string(m) + " is out of range: 1..65536 tokens");
  o.ms = r.ms;
  o.user_set_ms = !r.ms.empty();
  for (const std::string& f : r.weight_formats) o.formats.push_back(parse_weight_format(f));
  for (const std::string& m : r.modes)
    if (m != "eager" && m != "graph")
      throw UsageError("--mode '" + m + "' is not valid; valid: eager, graph");
  o.modes = r.modes;
  if (r.l2 != "cold" && r.l2 != "hot")
    throw UsageError("--l2 '" + r.l2 + "' is not valid; valid: cold, hot");
  if (r.format != "table" && r.format != "json")
    throw UsageError("--format '" + r.format + "' is not valid; valid: table, json");
  if (r.warmup < 0 || r.warmup > 1000)
    throw UsageError("--warmup " + std::to_string(r.warmup) + " is out of range: 0..1000");
  if (r.device < 0) throw UsageError("--device " + std::to_string(r.device) + " must be >= 0");
  if (r.output.empty()) throw UsageError("--output must name a file");
  o.measure.l2 = r.l2 == "cold" ? measure::L2Mode::cold : measure::L2Mode::hot;
  o.measure.kernel_timing = !r.no_kernel_timing;
  o.measure.warmup = r.warmup;
  o.measure.stopping.min_samples = r.min_samples;
  o.measure.stopping.max_noise = r.max_noise_pct / 100.0;
  o.measure.stopping.min_time_s = r.min_time_s;
  o.measure.stopping.timeout_s = r.timeout_s;
  o.measure.stopping.max_samples = r.max_samples;
  o.measure.stopping.validate();
  o.device = r.device;
  o.seed = r.seed;
  o.copy_bytes = r.copy_bytes;
  if (r.repeat < 1 || r.repeat > 10000)
    throw UsageError("--repeat " + std::to_string(r.repeat) + " is out of range: 1..10000");
  o.repeat = r.repeat;
  if (r.engines < 2 || r.engines > 64)
    throw UsageError("--engines " + std::to_string(r.engines) +
                     " is out of range: 2..64 (address reuse needs at least two)");
  o.engines = r.engines;
  if (!r.mutation.empty()) o.mutation = mutation_from_name(r.mutation);
  return o;
}

nlohmann::json options_json(const RunOptions& o) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const Shape& s : o.shapes) shapes.push_back(s.to_json());
  std::vector<std::string> formats;
  for (auto f : o.formats) formats.emplace_back(kernels::to_string(f));
  return {{"shapes", shapes},
          {"m", o.ms},
          {"weight_formats", formats},
          {"modes", o.modes},
          {"l2", measure::to_string(o.measure.l2)},
          {"kernel_timing", o.measure.kernel_timing},
          {"warmup", o.measure.warmup},
          {"min_samples", o.measure.stopping.min_samples},
          {"max_noise", o.measure.stopping.max_noise},
          {"min_time_s", o.measure.stopping.min_time_s},
          {"timeout_s", o.measure.stopping.timeout_s},
          {"max_samples", o.measure.stopping.max_samples},
          {"device", o.device},
          {"seed", o.seed},
          {"copy_bytes", o.copy_bytes},
          {"repeat", o.repeat},
          {"engines", o.engines},
          {"mutation", o.mutation ? nlohmann::json(std::string(info(*o.mutation).name))
                                  : nlohmann::json(nullptr)}};
}

}  // namespace

int exit_code_for(const report::Report& r) {
  switch (r.overall()) {
    case report::Verdict::pass:
    case report::Verdict::inconclusive: return to_int(ExitCode::ok);
    case report::Verdict::fail: return to_int(ExitCode::check_failed);
    case report::Verdict::error: return to_int(ExitCode::probe_error);
  }
  return to_int(ExitCode::probe_error);
}

namespace {

// Set by SIGINT; checked after every case so the report on disk is always whole.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

class Interrupted : public Error {
 public:
  Interrupted() : Error(ExitCode::interrupted, "interrupted") {}
};

// Runs the probes in this process, appending each case to `report` (and the file) at once.
void run_in_process(const std::vector<const ProbeInfo*>& probes, const RunOptions& options,
                    report::Report& report, const report::ReportWriter& writer) {
  const Device device = Device::open(options.device);
  std::optional<ScopedMutation> mutation;
  if (options.mutation) mutation.emplace(*options.mutation);
  DeviceAllocator allocator(DeviceAllocator::Mode::caching);
  measure::Sampler sampler(device, allocator, options.measure);

  bool context_poisoned = false;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const ProbeInfo& probe = *probes[i];
    for (int rep = 0; rep < options.repeat; ++rep) {
      std::fprintf(stderr, "[%zu/%zu] %.*s%s\n", i + 1, probes.size(),
                   static_cast<int>(probe.name.size()), probe.name.data(),
                   options.repeat > 1 ? (" #" + std::to_string(rep)).c_str() : "");
      ProbeState state(
          std::string(probe.name), options, device, allocator, sampler,
          [&](report::CaseResult c) {
            std::fprintf(stderr, "      %s %s\n", report::to_string(c.verdict).c_str(),
                         c.key().c_str());
            report.cases.push_back(std::move(c));
            writer.write(report);  // nothing measured is lost if a later case dies
            if (g_interrupted.load()) throw Interrupted();
          },
          rep);
      if (context_poisoned) {
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
        if (const auto* ce = dynamic_cast<const CudaError*>(&e)) {
          c.evidence["cuda_error"] = cudaGetErrorName(ce->status());
          context_poisoned = ce->sticky();
        }
        state.add_case(std::move(c));
      }
    }
  }
}

std::string last_lines(const std::string& path, std::size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

// Runs each probe in a child moebench, so one probe's fatal CUDA error (which poisons its
// context for the rest of that process) or crash is recorded as that probe's error while the
// rest of the suite still runs. Cases come back through the child's report, which it rewrites
// after every case, so even a child that dies keeps what it measured.
void run_isolated(const RunRequest& request, const std::vector<const ProbeInfo*>& probes,
                  report::Report& report, const report::ReportWriter& writer) {
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
    const std::string log = (dir / (name + ".log")).string();
    const int code = run_self(run_arguments(child), log);
    std::size_t got = 0;
    bool complete = false;
    if (std::filesystem::exists(child.output)) {
      const report::Report r = report::load_report(child.output);
      complete = r.invocation.value("complete", false);
      for (const report::CaseResult& c : r.cases) {
        std::fprintf(stderr, "      %s %s\n", report::to_string(c.verdict).c_str(), c.key().c_str());
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
                 std::to_string(got) + " cases: " + last_lines(log, 3);
      c.evidence = {{"exit_code", code}, {"log_tail", last_lines(log, 20)}};
      report.cases.push_back(c);
    } else if (code == to_int(ExitCode::usage) || code == to_int(ExitCode::environment)) {
      throw Error(static_cast<ExitCode>(code), last_lines(log, 1));
    }
    writer.write(report);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

std::vector<std::string> run_arguments(const RunRequest& r) {
  auto join = [](const auto& v) {
    std::string out;
    for (const auto& x : v) {
      std::ostringstream s;
      s << x;
      out += (out.empty() ? "" : ",") + s.str();
    }
    return out;
  };
  auto num = [](auto v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  std::vector<std::string> a{"run"};
  a.insert(a.end(), r.probes.begin(), r.probes.end());
  if (!r.shapes.empty()) a.insert(a.end(), {"--shape", join(r.shapes)});
  if (!r.ms.empty()) a.insert(a.end(), {"--m", join(r.ms)});
  if (!r.weight_formats.empty()) a.insert(a.end(), {"--weight-format", join(r.weight_formats)});
  if (!r.modes.empty()) a.insert(a.end(), {"--mode", join(r.modes)});
  a.insert(a.end(), {"--l2", r.l2, "-o", r.output, "--format", r.format,
                     "--min-samples", num(r.min_samples), "--max-noise", num(r.max_noise_pct),
                     "--min-time", num(r.min_time_s), "--timeout", num(r.timeout_s),
                     "--max-samples", num(r.max_samples), "--warmup", num(r.warmup),
                     "--device", num(r.device), "--seed", num(r.seed),
                     "--copy-bytes", num(r.copy_bytes), "--repeat", num(r.repeat),
                     "--engines", num(r.engines)});
  if (!r.mutation.empty()) a.insert(a.end(), {"--mutation", r.mutation});
  if (!r.fixtures.empty()) a.insert(a.end(), {"--fixtures", r.fixtures});
  if (r.no_kernel_timing) a.push_back("--no-kernel-timing");
  if (r.in_process) a.push_back("--in-process");
  if (r.quiet) a.push_back("--quiet");
  return a;
}

report::Report execute_run(const RunRequest& request) {
  std::vector<const ProbeInfo*> probes;
  const RunOptions options = resolve_run_options(request, probes);

  report::Report report;
  report.tool = report::tool_info();
  report.invocation = {{"argv", request.argv}, {"started_at", now_iso8601()},
                       {"complete", false}, {"isolation", request.in_process ? "in-process" : "process-per-probe"}};
  report.options = options_json(options);
  const report::ReportWriter writer(request.output);

  // The device is touched only now, after every input was accepted.
  std::string why;
  if (Device::count(&why) == 0) throw EnvironmentError("no usable CUDA GPU (" + why + ")");
  report.environment = report::capture_environment(options.device);
  writer.write(report);

  g_interrupted.store(false);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  struct sigaction previous {};
  sigaction(SIGINT, &action, &previous);
  try {
    if (request.in_process)
      run_in_process(probes, options, report, writer);
    else
      run_isolated(request, probes, report, writer);
  } catch (const Interrupted&) {
  }
  sigaction(SIGINT, &previous, nullptr);
  if (g_interrupted.load()) {
    report.invocation["interrupted"] = true;
    writer.write(report);
    throw Error(ExitCode::interrupted, "interrupted; the partial report (" +
                                           std::to_string(report.cases.size()) +
                                           " cases) is in " + request.output);
  }
  report.invocation["finished_at"] = now_iso8601();
  report.invocation["complete"] = true;
  writer.write(report);

  if (!request.quiet) {
    if (request.format == "json")
      std::cout << nlohmann::json(report).dump(1) << '\n';
    else
      std::cout << report::render_table(report);
  }
  std::fprintf(stderr, "report: %s (%s)\n", request.output.c_str(),
               report::to_string(report.overall()).c_str());
  return report;
}

namespace {

void add_run_options(CLI::App& run, RunRequest& r) {
  run.add_option("probes", r.probes, "Probes to run (default: the default suite; see `list`)");
  run.add_option("--shape", r.shapes,
                 "Shape names, or paths to a shape file or a model's config.json "
                 "(comma-separated; default: per probe)")
      ->delimiter(',');
  run.add_option("--m", r.ms, "Tokens per forward, comma-separated (default: per probe)")
      ->delimiter(',');
  run.add_option("--weight-format", r.weight_formats, "bf16, int4 (default: both)")
      ->delimiter(',');
  run.add_option("--mode", r.modes, "eager, graph (default: both)")->delimiter(',');
  run.add_option("--l2", r.l2, "cold: flush L2 before each sample; hot: don't")
      ->capture_default_str();
  run.add_option("--min-samples", r.min_samples, "Stop rule: at least this many samples")
      ->capture_default_str();
  run.add_option("--max-noise", r.max_noise_pct,
                 "Stop rule: relative std. dev. of GPU time at most this, in percent")
      ->capture_default_str();
  run.add_option("--min-time", r.min_time_s, "Stop rule: at least this much GPU time, seconds")
      ->capture_default_str();
  run.add_option("--timeout", r.timeout_s,
                 "Stop rule: at most this much wall time per measurement, seconds")
      ->capture_default_str();
  run.add_option("--max-samples", r.max_samples, "Stop rule: at most this many samples")
      ->capture_default_str();
  run.add_option("--warmup", r.warmup, "Untimed runs before sampling")->capture_default_str();
  run.add_flag("--no-kernel-timing", r.no_kernel_timing,
               "Skip CUPTI kernel timing (kernel time and count)");
  run.add_option("--device", r.device, "CUDA device index")->capture_default_str();
  run.add_option("--seed", r.seed, "Seed of weights, inputs and routing")->capture_default_str();
  run.add_option("-o,--output", r.output, "Report file (JSON), rewritten after every case")
      ->capture_default_str();
  run.add_option("--format", r.format, "Standard output: table or json")->capture_default_str();
  run.add_option("--mutation", r.mutation,
                 "Inject a fault for the whole run (see `list mutations`)");
  run.add_option("--copy-bytes", r.copy_bytes,
                 "Buffer size of probe copy in bytes (default 4 GiB, capped by free memory)");
  run.add_option("--repeat", r.repeat, "Run each probe this many times")->capture_default_str();
  run.add_option("--engines", r.engines, "Probe two-engine: engines built one after another")
      ->capture_default_str();
  run.add_option("--fixtures", r.fixtures, "Folder with shapes/ and cases/");
  run.add_flag("--in-process", r.in_process,
               "Run every probe in this process (default: one child process per probe, so a "
               "sticky CUDA error or crash costs only that probe)");
  run.add_flag("--quiet", r.quiet, "No table or JSON on standard output");
}

}  // namespace

Command add_run_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto request = std::make_shared<RunRequest>();
  request->argv = argv;
  CLI::App* run = app.add_subcommand("run", "Run probes and write a JSON report");
  add_run_options(*run, *request);
  return {run, [request] { return exit_code_for(execute_run(*request)); }};
}

}  // namespace moe::cli
