#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probes/probe.hpp"
#include "probes/run_options.hpp"
#include "reports/report.hpp"

namespace moe::cli {

// `moebench run` as the user asked for it, before validation. `repro` and `selftest` build
// one too, so every path to the probes validates and records the same way.
struct RunRequest {
  std::vector<std::string> probes;  // empty: the default suite
  std::vector<std::string> shapes;
  std::string assume_routing;  // --assume-routing: the routing family for an unknown model_type
  std::vector<int> ms;
  std::vector<std::string> weight_formats;
  std::vector<std::string> modes;
  std::vector<std::string> exchanges;  // probe ep-step: alltoall, sendrecv, lsa (default: per probe)
  std::string l2 = "cold";
  std::string allocator = "caching";  // the run's device allocator: caching or plain
  std::string output = "moebench-report.json";
  std::string format = "table";  // stdout: table or json
  std::string mutation;
  std::string engine;  // --engine: an engine adapter's shared library (empty: moebench's engine)
  std::vector<std::string> switches;  // --switch NAME=VALUE, over the environment's
  std::size_t min_samples = 10;
  double max_noise_pct = 0.5;
  double min_time_s = 0.5;
  double timeout_s = 15;
  std::size_t max_samples = 5000;
  std::size_t host_samples = 100;
  int warmup = 1;
  bool no_kernel_timing = false;
  std::optional<int> device;  // --device; unset: the launcher's local rank, else 0 (ep::choose_device)
  std::string devices;  // --devices: the expert-parallel probes' GPUs, "0,1" or "all"
  std::uint64_t seed = 1;
  std::size_t copy_bytes = 0;
  int repeat = 1;
  int engines = 3;
  int barrier_reps = 300;          // probe barrier: enqueues a loop
  int max_layers = 0;              // 0: the engine's own choice (4x the L2, at most 32)
  bool no_stream_blocker = false;  // enqueue without holding the stream (sanitizer runs)
  std::string telemetry = "all";   // probe route-telemetry: all, checks, overhead
  bool histogram = false;          // routing histograms in the report (probes that have them)
  std::optional<double> hot_share;           // probe expert-residency's policy
  std::optional<std::size_t> device_budget;  // bytes of routed experts a layer keeps on the device
  // --peer: none or cublas; empty: cublas in the default suite (where the library loads), none
  // when probes are named. `peer_optional` (hidden --peer-optional) hands the default suite's
  // choice to its bandwidth child process, which is run by name.
  std::string peer;
  bool peer_optional = false;
  std::string fixtures;
  bool quiet = false;  // no table on stdout (callers that print their own)
  bool in_process = false;  // all probes in this process (default: a child process per probe)
  std::string filter;  // --filter: only the cases whose key this regular expression matches
  // Progress ("case i of n: KEY" as each case starts) goes to `progress_fd`; a child run of
  // one probe (process-per-probe) is told where its cases fall in the whole run's count
  // (hidden --case-offset, --case-total, --progress-fd). case_total 0: this run counts its own.
  std::size_t case_offset = 0;
  std::size_t case_total = 0;
  int progress_fd = 2;
  // A child run of one probe (process-per-probe) sends every finished case to the parent on
  // this descriptor as it finishes it (hidden --event-fd; report::RunEventWriter). -1: none.
  int event_fd = -1;
  bool dry_run = false;        // list the cases, touch no GPU (apps/moebench/dry_run.hpp)
  double ceiling_gbps = 4550;  // --dry-run: the read ceiling its floors are computed at
  std::vector<std::string> argv;
};

// Checks every input and resolves names (probes, shapes, mutation) before any device is
// touched; raises UsageError naming the bad value and the valid ones. `probes` receives the
// probes to run, in order.
RunOptions resolve_run_options(const RunRequest& request, std::vector<const ProbeInfo*>& probes);
nlohmann::json options_json(const RunOptions& options);

// The checks that need the device's size, made once the device is known and before any probe
// runs: a residency budget larger than the device's memory. Raises UsageError.
void validate_for_device(const RunOptions& options, std::size_t device_memory_bytes);

// A named set of token counts --m takes in place of numbers: `decode` (1..64) and `prefill`
// (128..16384, the sizes a prefill kernel is judged at; too long for the default suite).
struct TokenCountSet {
  std::string_view name;
  std::vector<int> ms;
};
std::span<const TokenCountSet> token_count_sets();

// The --m values as typed ("1,2,4", "prefill", "1,prefill" or repeated): whole numbers
// 1..65536 or set names, no empty items; raises UsageError naming the bad item.
std::vector<int> parse_token_counts(const std::vector<std::string>& texts);

// Validates, runs, writes request.output after every case and returns the finished report.
// Raises moe::Error for bad input (before the device is touched) or a missing GPU.
report::Report execute_run(const RunRequest& request);

// The `moebench run` arguments (after the program name) that make the same request.
std::vector<std::string> run_arguments(const RunRequest& request);

// The arguments an expert-parallel launcher gives each worker: this request in one process,
// quiet, once, without probes, --devices or an output (the probe adds its name, --device and
// -o).
std::vector<std::string> ep_worker_arguments(const RunRequest& request);
// 0 when every case passed (or was inconclusive), 1 on a failed check, 4 on a probe error.
int exit_code_for(const report::Report& report);

}  // namespace moe::cli
