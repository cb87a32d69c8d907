// `moebench run`: validate, run the probes, write the report, print the table.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>

#include "apps/moebench/child_process.hpp"
#include "apps/moebench/commands.hpp"
#include "apps/moebench/dry_run.hpp"
#include "apps/moebench/exit_on_stop_signal.hpp"
#include "apps/moebench/live_report.hpp"
#include "apps/moebench/probe_runner.hpp"
#include "apps/moebench/run_request.hpp"
#include "apps/moebench/stop_signals.hpp"
#include "common/errors.hpp"
#include "engine/device.hpp"
#include "kernels/peer/cublas_library.hpp"
#include "probes/ep_common/ep_requirements.hpp"
#include "reports/environment.hpp"
#include "reports/report_writer.hpp"
#include "reports/run_events.hpp"
#include "reports/table.hpp"

namespace moe::cli {

report::Report execute_run(const RunRequest& request) {
  std::vector<const ProbeInfo*> probes;
  RunOptions options = resolve_run_options(request, probes);
  options.worker_args = ep_worker_arguments(request);

  report::Report report;
  report.tool = report::tool_info();
  report.invocation = {{"argv", request.argv}, {"started_at", now_iso8601()},
                       {"complete", false}, {"isolation", request.in_process ? "in-process" : "process-per-probe"}};
  report.options = options_json(options);
  const report::ReportWriter writer(request.output);
  // A child run of one probe: its cases go to the parent as they are finished, and it stops
  // when the parent dies.
  std::optional<report::RunEventWriter> events;
  if (request.event_fd >= 0) {
    events.emplace(request.event_fd);
    stop_with_parent(request.event_fd);
  }
  if (options.adapter && !request.quiet) {
    std::string through;
    for (const ProbeInfo* p : probes) through += (through.empty() ? "" : ", ") + std::string(p->name);
    std::string left;
    for (const std::string& l : options.left_out_for_adapter) left += (left.empty() ? "" : "; ") + l;
    std::fprintf(stderr, "engine: %s (engine ABI %s, sha256 %s) for %s%s\n", options.adapter->label().c_str(),
                 options.adapter->abi_version().c_str(), options.adapter->sha256().c_str(), through.c_str(),
                 left.empty() ? "" : ("; not run through it: " + left).c_str());
  }
  // A peer asked for by name must load: said now, in one line, before anything runs.
  if (options.peer_required) {
    if (const auto cublas = kernels::peer::find_cublas(); !cublas.library)
      throw EnvironmentError("--peer cublas: " + cublas.missing_message());
  }

  // The device is touched only now, after every input was accepted; a run of test-only probes
  // (probes/probe.hpp, test_probes) touches none.
  bool needs_device = false;
  for (const ProbeInfo* p : probes) needs_device = needs_device || p->needs_device;
  std::string why;
  if (needs_device && Device::count(&why) == 0)
    throw EnvironmentError("no usable CUDA GPU (" + why + ")");
  ep::check_multi_gpu_requirements(probes, options);
  if (options.device_budget) validate_for_device(options, Device::open(options.device).total_memory());

  // From here a stop signal (SIGINT, SIGTERM, SIGHUP) leaves a whole report that says where
  // the run stopped, and the exit code 128 + the signal.
  const StopSignals stop;
  LiveReport live(report, writer, events ? &*events : nullptr);
  std::optional<ExitOnStopSignal> exit_on_stop;
  if (request.in_process) exit_on_stop.emplace(stop, live);
  const nlohmann::json environment = report::capture_environment(options.device);
  live.update([&](report::Report& r) { r.environment = environment; });

  run_probes(request, probes, options, live, stop);
  exit_on_stop.reset();
  if (const int signal = stop.received()) {
    live.record_interruption(signal);
    throw Error(static_cast<ExitCode>(exit_code_for_signal(signal)),
                signal_name(signal) + ": stopped; the partial report (" +
                    std::to_string(live.case_count()) + " cases) is in " + writer.path());
  }
  live.record_complete();

  if (!request.quiet) {
    if (request.format == "json")
      std::cout << nlohmann::json(report).dump(1) << '\n';
    else
      std::cout << report::render_table(report);
  }
  std::fprintf(stderr, "report: %s (%s)%s\n", writer.path().c_str(),
               report::to_string(report.overall()).c_str(),
               writer.fell_back() ? (" (not " + request.output + ": it could not be written)").c_str()
                                  : "");
  return report;
}

namespace {

void add_run_options(CLI::App& run, RunRequest& r, std::vector<std::string>& m_text) {
  run.add_option("probes", r.probes, "Probes to run (default: the default suite; see `list`)");
  run.add_option("--shape", r.shapes,
                 "Shape names, or paths to a shape file or a model's config.json "
                 "(comma-separated; default: per probe)")
      ->delimiter(',');
  run.add_option("--assume-routing", r.assume_routing, kAssumeRoutingHelp);
  run.add_option("--m", m_text,
                 "Tokens per forward, 1..65536, comma-separated; or a named set: decode (1,2,4,8,16,32,64), "
                 "prefill (128,512,2048,8192,16384) (default: per probe)");
  run.add_option("--weight-format", r.weight_formats, "bf16, int4 (default: both)")
      ->delimiter(',');
  run.add_option("--mode", r.modes, "eager, graph (default: both)")->delimiter(',');
  run.add_option("--exchange", r.exchanges,
                 "Probe ep-step: its exchanges, alltoall, sendrecv, lsa (comma-separated; default: "
                 "alltoall where the loaded NCCL has it, and sendrecv; lsa, NCCL's device API on "
                 "one host's GPUs, only when named)")
      ->delimiter(',');
  run.add_option("--l2", r.l2, "cold: flush L2 before each sample; hot: don't")
      ->capture_default_str();
  run.add_option("--allocator", r.allocator,
                 "Device allocator: caching (size classes, LIFO reuse, as real engines have) or "
                 "plain (cudaMalloc/cudaFree for every buffer); the bug probes must hold under both")
      ->capture_default_str();
  run.add_option("--min-samples", r.min_samples, "Stop rule: at least this many samples")
      ->check(whole_number())
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
      ->check(whole_number())
      ->capture_default_str();
  run.add_option("--host-samples", r.host_samples,
                 "Host pass (with kernel timing): at most this many samples, never more than "
                 "the main loop took, time the enqueue with CUPTI off")
      ->check(whole_number())
      ->capture_default_str();
  run.add_option("--warmup", r.warmup, "Untimed runs before sampling")->capture_default_str();
  run.add_flag("--no-kernel-timing", r.no_kernel_timing,
               "Skip CUPTI kernel timing (kernel time and count)");
  run.add_option("--device", r.device,
                 "CUDA device index (default: in a worker started by mpirun, srun or torchrun, "
                 "its local rank: LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or "
                 "SLURM_LOCALID; else 0)");
  run.add_option("--devices", r.devices,
                 "Expert-parallel probes: GPUs, one worker each (\"0,1\" or \"all\", the default)");
  run.add_option("--seed", r.seed, "Seed of weights, inputs and routing")
      ->check(whole_number())
      ->capture_default_str();
  run.add_option("-o,--output", r.output, "Report file (JSON), rewritten after every case")
      ->capture_default_str();
  run.add_option("--format", r.format, "Standard output: table or json")->capture_default_str();
  run.add_option("--mutation", r.mutation,
                 "Inject a fault for the whole run (see `list mutations`)");
  run.add_option("--engine", r.engine,
                 "Build the probes' engines through this engine adapter, a shared library "
                 "(docs/engine-abi.md); checked before anything runs. Named probes must each "
                 "run through it; the default suite runs those that can")
      ->check(adapter_path());
  run.add_option("--switch", r.switches,
                 "Set an engine switch, NAME=VALUE, over its environment variable; repeatable "
                 "(see `list switches`; every report records the switches in force)");
  run.add_option("--copy-bytes", r.copy_bytes,
                 "Buffer size of probe copy in bytes (default 4 GiB, capped by free memory)")
      ->check(whole_number());
  run.add_option("--repeat", r.repeat, "Run each probe this many times")->capture_default_str();
  run.add_option("--engines", r.engines, "Probe two-engine: engines built one after another")
      ->capture_default_str();
  run.add_option("--barrier-reps", r.barrier_reps,
                 "Probe barrier: enqueues in each of its two loops, 16..100000 (enough to fill "
                 "the launch queue several times over; fewer keeps sanitizer runs short, and the "
                 "verdict may then be INCONCLUSIVE: the queue did not fill)")
      ->capture_default_str();
  run.add_option("--max-layers", r.max_layers,
                 "Cap on the layers of engines that choose their own count, 0..32 (0: no cap; "
                 "they take enough that a decode step touches 4x the L2, which cold figures "
                 "need; a cap makes quick or sanitizer runs shorter)")
      ->capture_default_str();
  run.add_flag("--no-stream-blocker", r.no_stream_blocker,
               "Enqueue without holding the stream: GPU-event time then includes the host's "
               "launch latency. For runs whose enqueue can take seconds (compute-sanitizer)");
  run.add_option("--telemetry", r.telemetry,
                 "Probe route-telemetry: all, checks (the window's properties only) or overhead "
                 "(the timing only)")
      ->capture_default_str();
  run.add_flag("--histogram", r.histogram,
               "Write each telemetry window's per-expert counts (the routing histogram) into the "
               "report (probes route-telemetry, expert-residency)");
  run.add_option("--hot-share", r.hot_share,
                 "Probe expert-residency: an expert stays on the device when it received at least "
                 "this share of the window's routed pairs, (0, 1] (default 0.01)");
  run.add_option("--device-budget", r.device_budget,
                 "Probe expert-residency: device bytes of routed experts a layer may keep (default: "
                 "no cap; at least one expert, at most the device)")
      ->check(whole_number());
  run.add_option("--peer", r.peer,
                 "Probe bandwidth: a vendor peer timed beside each case, none or cublas (cuBLAS's "
                 "grouped GEMM, bf16, over the same experts and tokens; libcublas.so.13 or .so.12 "
                 "loaded at run time, exit 3 without it). Default: cublas in the default suite "
                 "where the library loads, none when probes are named");
  run.add_flag("--peer-optional", r.peer_optional,
               "The default suite's peer choice, for its bandwidth child process")
      ->group("");
  run.add_option("--filter", r.filter,
                 "Run only the cases whose key this regular expression matches (ECMAScript, "
                 "searched anywhere in the key, as compare's --filter; keys as the report and "
                 "the progress lines give them: PROBE/CASE/shape=S/m=M/format=F/mode=MODE/dims=D, "
                 "each part where the case has it). Exit 2 when it matches no case");
  // A child run of one probe: where its cases fall in the parent run's count, and where the
  // progress lines go (the parent's stderr, handed down as a descriptor).
  run.add_option("--case-offset", r.case_offset)->group("");
  run.add_option("--case-total", r.case_total)->group("");
  run.add_option("--progress-fd", r.progress_fd)->group("");
  run.add_option("--event-fd", r.event_fd)->group("");
  run.add_option("--fixtures", r.fixtures, kFixturesHelp);
  run.add_flag("--in-process", r.in_process,
               "Run every probe in this process (default: one child process per probe, so a "
               "sticky CUDA error or crash costs only that probe)");
  run.add_flag("--quiet", r.quiet, "No table or JSON on standard output");
  run.add_flag("--dry-run", r.dry_run,
               "List every case the run would make (shape, M, format, mode, layers, bytes, the "
               "floor at --ceiling-gbps) and exit; no GPU is touched, no report written");
  run.add_option("--ceiling-gbps", r.ceiling_gbps,
                 "--dry-run: the read ceiling the floors are computed at (an H200's by default)")
      ->capture_default_str();
}

// --dry-run: the cases, after every input was validated as a real run validates it.
int dry_run(const RunRequest& request) {
  if (!(request.ceiling_gbps > 0 && request.ceiling_gbps <= 1e5))
    throw UsageError("--ceiling-gbps " + std::to_string(request.ceiling_gbps) +
                     " is out of range: above 0, at most 100000");
  std::vector<const ProbeInfo*> probes;
  const RunOptions options = resolve_run_options(request, probes);
  DryRunOptions dry;
  dry.ceiling_gbps = request.ceiling_gbps;
  std::cout << render_dry_run(probes, options, dry);
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto request = std::make_shared<RunRequest>();
  auto m_text = std::make_shared<std::vector<std::string>>();
  request->argv = argv;
  CLI::App* run = app.add_subcommand("run", "Run probes and write a JSON report");
  add_run_options(*run, *request, *m_text);
  return {run, [request, m_text] {
            request->ms = parse_token_counts(*m_text);
            if (request->dry_run) return dry_run(*request);
            return exit_code_for(execute_run(*request));
          }};
}

}  // namespace moe::cli
