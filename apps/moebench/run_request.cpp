// A RunRequest checked and resolved into RunOptions, and turned back into arguments.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <charconv>
#include <cstdlib>
#include <set>
#include <sstream>

#include "apps/moebench/commands.hpp"
#include "apps/moebench/run_request.hpp"
#include "common/errors.hpp"
#include "engine/ep/device_list.hpp"
#include "engine/ep/exchange_names.hpp"
#include "engine/ep/launch_env.hpp"
#include "engine/shape_library.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/adapter_requirements.hpp"
#include "probes/probe.hpp"
#include "probes/sweep_plan.hpp"
#include "reports/metadata.hpp"

namespace moe::cli {

namespace {

kernels::WeightFormat parse_weight_format(const std::string& s) {
  if (s == "bf16") return kernels::WeightFormat::bf16;
  if (s == "int4") return kernels::WeightFormat::int4;
  throw UsageError("--weight-format '" + s + "' is not valid; valid: bf16, int4");
}

bool selected(const std::vector<const ProbeInfo*>& probes, std::string_view name) {
  return std::any_of(probes.begin(), probes.end(), [&](const ProbeInfo* p) { return p->name == name; });
}

// --telemetry, --histogram and the residency policy: valid values, and only with the probes
// that use them, so a typo'd request fails here rather than running without effect.
void resolve_telemetry_options(const RunRequest& r, const std::vector<const ProbeInfo*>& probes, RunOptions& o) {
  if (r.telemetry != "all" && r.telemetry != "checks" && r.telemetry != "overhead")
    throw UsageError("--telemetry '" + r.telemetry + "' is not valid; valid: all, checks, overhead");
  if (r.telemetry != "all" && !selected(probes, "route-telemetry"))
    throw UsageError("--telemetry " + r.telemetry + " applies to probe route-telemetry, which this run does not include");
  o.telemetry = r.telemetry;
  if (r.histogram) {
    std::string with;
    for (const ProbeInfo& p : all_probes())
      if (p.histogram) with += (with.empty() ? "" : ", ") + std::string(p.name);
    bool any = false;
    for (const ProbeInfo* p : probes) {
      // Named probes must each have one; the default suite writes them where it can.
      if (!p->histogram && !r.probes.empty())
        throw UsageError("--histogram: probe " + std::string(p->name) + " has no routing histogram; probes with one: " + with);
      any = any || p->histogram;
    }
    if (!any) throw UsageError("--histogram: no probe of this run has a routing histogram; probes with one: " + with);
  }
  o.histogram = r.histogram;
  if ((r.hot_share || r.device_budget) && !selected(probes, "expert-residency"))
    throw UsageError(std::string(r.hot_share ? "--hot-share" : "--device-budget") +
                     " applies to probe expert-residency, which this run does not include");
  if (r.hot_share) {
    if (!(*r.hot_share > 0 && *r.hot_share <= 1))
      throw UsageError("--hot-share " + std::to_string(*r.hot_share) +
                       " is out of range: a share of the routed pairs above 0 and at most 1");
    o.hot_share = *r.hot_share;
  }
  if (r.device_budget) {
    // Below one expert no plan can keep anything hot: refused for every shape and format the
    // probe would run (its defaults: deepseek-v2-lite, bf16).
    std::vector<Shape> shapes = o.shapes;
    if (shapes.empty())
      shapes.push_back(resolve_shape("deepseek-v2-lite", shape_library(o.fixtures_dir)));
    std::vector<kernels::WeightFormat> formats = o.formats;
    if (formats.empty()) formats.push_back(kernels::WeightFormat::bf16);
    for (const Shape& shape : shapes)
      for (kernels::WeightFormat f : formats) {
        const kernels::MoeDims d = shape.dims(f);
        std::size_t expert = 0;
        for (auto kind : {kernels::TensorKind::gate_up, kernels::TensorKind::down})
          expert += kernels::expert_weight_bytes(d, kind) + kernels::expert_scale_bytes(d, kind);
        if (*r.device_budget < expert)
          throw UsageError("--device-budget " + std::to_string(*r.device_budget) + " is below one expert of " +
                           shape.name + " (" + std::string(kernels::to_string(f)) + "): " + std::to_string(expert) +
                           " bytes");
      }
    o.device_budget = *r.device_budget;
  }
}

// --peer: a valid name, and by name only with probe bandwidth, which is the one that times it.
void resolve_peer(const RunRequest& r, const std::vector<const ProbeInfo*>& probes, RunOptions& o) {
  if (!r.peer.empty() && r.peer != "none" && r.peer != "cublas")
    throw UsageError("--peer '" + r.peer + "' is not valid; valid: none, cublas");
  if (r.peer == "cublas" && !selected(probes, "bandwidth"))
    throw UsageError("--peer cublas applies to probe bandwidth, which this run does not include");
  const bool default_suite = r.probes.empty() || r.peer_optional;
  o.peer = r.peer == "cublas" || (r.peer.empty() && default_suite && selected(probes, "bandwidth")) ? Peer::cublas
                                                                                                  : Peer::none;
  o.peer_required = r.peer == "cublas";
}

// Every list option's values once (probes, shapes, M, formats, modes), naming the repeat.
void refuse_list_duplicates(const RunRequest& r) {
  refuse_duplicates("probe", r.probes);
  refuse_duplicates("--shape", r.shapes);
  std::vector<std::string> ms;
  for (int m : r.ms) ms.push_back(std::to_string(m));
  refuse_duplicates("--m", ms);
  refuse_duplicates("--weight-format", r.weight_formats);
  refuse_duplicates("--mode", r.modes);
  std::vector<std::string> switches;  // by name: pdl=on and pdl=off are one switch twice
  for (const std::string& s : r.switches) switches.push_back(s.substr(0, s.find('=')));
  refuse_duplicates("--switch", switches);
}

// Two shapes under one name would share case keys' shape= part and every table's row label.
void refuse_shape_name_clash(const std::vector<Shape>& shapes) {
  for (std::size_t i = 0; i < shapes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (shapes[i].name == shapes[j].name)
        throw UsageError("--shape: two shapes are named '" + shapes[i].name + "' (" +
                         shapes[j].source + " and " + shapes[i].source +
                         "): give one a \"name\" (a shape file) or an \"_name_or_path\" (a "
                         "config)");
}

}  // namespace

std::span<const TokenCountSet> token_count_sets() {
  static const std::vector<TokenCountSet> sets{
      {"decode", {1, 2, 4, 8, 16, 32, 64}},
      {"prefill", {128, 512, 2048, 8192, 16384}},
  };
  return sets;
}

std::vector<int> parse_token_counts(const std::vector<std::string>& texts) {
  std::vector<int> ms;
  for (const std::string& text : texts) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                              : comma - start);
      const auto set = std::find_if(token_count_sets().begin(), token_count_sets().end(),
                                    [&](const TokenCountSet& s) { return s.name == item; });
      if (set != token_count_sets().end()) {
        ms.insert(ms.end(), set->ms.begin(), set->ms.end());
        if (comma == std::string::npos) break;
        start = comma + 1;
        continue;
      }
      int m = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), m);
      if (item.empty() || ec != std::errc() || end != item.data() + item.size() || m < 1 ||
          m > 65536) {
        std::string sets;
        for (const TokenCountSet& s : token_count_sets())
          sets += (sets.empty() ? "" : ", ") + std::string(s.name) + " (" + std::to_string(s.ms.front()) + ".." +
                  std::to_string(s.ms.back()) + ")";
        throw UsageError("--m '" + (item.empty() ? text : item) +
                         "' is not valid: whole numbers of tokens 1..65536, comma-separated, or a named set: " +
                         sets);
      }
      ms.push_back(m);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return ms;
}

RunOptions resolve_run_options(const RunRequest& r, std::vector<const ProbeInfo*>& probes) {
  if (r.probes.empty()) {
    for (const ProbeInfo& p : all_probes())
      if (p.in_default_suite) probes.push_back(&p);
  } else {
    for (const std::string& name : r.probes) probes.push_back(&probe_by_name(name));
  }
  refuse_list_duplicates(r);
  RunOptions o;
  // The adapter is loaded and checked first: every other check may depend on what it takes.
  if (!r.engine.empty()) {
    o.adapter = std::make_shared<const external::AdapterLibrary>(r.engine);
    o.left_out_for_adapter = select_probes_for_adapter(probes, !r.probes.empty(), *o.adapter);
    if (!r.mutation.empty())
      throw UsageError("--mutation " + r.mutation + " restores a bug in moebench's own engine; through --engine it "
                       "would change nothing");
  }
  o.fixtures_dir = find_fixtures(r.fixtures).dir;  // empty: none found, the built-in shapes
  std::error_code ec;
  if (!r.shapes.empty()) {
    const auto library = shape_library(o.fixtures_dir);
    for (const std::string& s : r.shapes)
      o.shapes.push_back(resolve_shape(s, library, r.assume_routing));
    o.user_set_shapes = true;
    refuse_shape_name_clash(o.shapes);
    // Routing a config asks for that the route kernel does not compute is refused by key.
    for (const Shape& s : o.shapes) refuse_not_computed(s);
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
  if (r.allocator != "caching" && r.allocator != "plain")
    throw UsageError("--allocator '" + r.allocator + "' is not valid; valid: caching, plain");
  o.allocator = r.allocator == "caching" ? DeviceAllocator::Mode::caching
                                         : DeviceAllocator::Mode::plain;
  if (r.format != "table" && r.format != "json")
    throw UsageError("--format '" + r.format + "' is not valid; valid: table, json");
  if (r.warmup < 0 || r.warmup > 1000)
    throw UsageError("--warmup " + std::to_string(r.warmup) + " is out of range: 0..1000");
  if (r.device && *r.device < 0) throw UsageError("--device " + std::to_string(*r.device) + " must be >= 0");
  if (r.output.empty()) throw UsageError("--output must name a file");
  {
    // Checked now, not when the first case is written: a run must not measure for nothing.
    const std::filesystem::path dir = std::filesystem::path(r.output).parent_path();
    const std::string folder = dir.empty() ? "." : dir.string();
    if (!std::filesystem::is_directory(folder, ec) || ::access(folder.c_str(), W_OK) != 0)
      throw UsageError("--output '" + r.output + "': folder '" + folder +
                       "' does not exist or is not writable");
    if (std::filesystem::is_directory(r.output, ec))
      throw UsageError("--output '" + r.output + "' is a folder: name the report file, e.g. '" +
                       (std::filesystem::path(r.output) / "moebench-report.json").string() + "'");
    if (std::filesystem::exists(r.output, ec) && ::access(r.output.c_str(), W_OK) != 0)
      throw UsageError("--output '" + r.output + "' exists and is not writable");
  }
  constexpr std::size_t kMinCopy = std::size_t{1} << 20, kMaxCopy = std::size_t{1} << 40;
  if (r.copy_bytes != 0 && (r.copy_bytes < kMinCopy || r.copy_bytes > kMaxCopy || r.copy_bytes % 16))
    throw UsageError("--copy-bytes " + std::to_string(r.copy_bytes) +
                     " is out of range: 0 (4 GiB, capped by free memory) or a multiple of 16 "
                     "from 1048576 (1 MiB) to 1099511627776 (1 TiB)");
  o.measure.l2 = r.l2 == "cold" ? measure::L2Mode::cold : measure::L2Mode::hot;
  o.measure.kernel_timing = !r.no_kernel_timing;
  o.measure.warmup = r.warmup;
  o.measure.stopping.min_samples = r.min_samples;
  o.measure.stopping.max_noise = r.max_noise_pct / 100.0;
  o.measure.stopping.min_time_s = r.min_time_s;
  o.measure.stopping.timeout_s = r.timeout_s;
  o.measure.stopping.max_samples = r.max_samples;
  o.measure.stopping.validate();
  if (r.host_samples < 1 || r.host_samples > 1000000)
    throw UsageError("--host-samples " + std::to_string(r.host_samples) +
                     " is out of range: 1..1000000");
  o.measure.host_samples = r.host_samples;
  const ep::DeviceChoice device = ep::choose_device(r.device, [](const char* n) { return std::getenv(n); });
  o.device = device.device;
  o.device_source = device.source;
  o.seed = r.seed;
  o.copy_bytes = r.copy_bytes;
  o.devices = ep::parse_device_list(r.devices);
  if (!r.exchanges.empty() && !selected(probes, "ep-step"))
    throw UsageError("--exchange applies to probe ep-step, which this run does not include");
  ep::validate_exchange_names(r.exchanges);
  o.exchanges = r.exchanges;
  if (r.repeat < 1 || r.repeat > 10000)
    throw UsageError("--repeat " + std::to_string(r.repeat) + " is out of range: 1..10000");
  o.repeat = r.repeat;
  if (r.engines < 2 || r.engines > 64)
    throw UsageError("--engines " + std::to_string(r.engines) +
                     " is out of range: 2..64 (address reuse needs at least two)");
  o.engines = r.engines;
  if (r.barrier_reps < 16 || r.barrier_reps > 100000)
    throw UsageError("--barrier-reps " + std::to_string(r.barrier_reps) +
                     " is out of range: 16..100000 (each loop's second half is its sample)");
  o.barrier_reps = r.barrier_reps;
  if (r.max_layers < 0 || r.max_layers > 32)
    throw UsageError("--max-layers " + std::to_string(r.max_layers) +
                     " is out of range: 0 (no cap) or 1..32");
  o.max_layers = r.max_layers;
  resolve_telemetry_options(r, probes, o);
  resolve_peer(r, probes, o);
  o.measure.block_during_enqueue = !r.no_stream_blocker;
  if (!r.mutation.empty()) o.mutation = mutation_from_name(r.mutation);
  o.engine = EngineOptions::from_environment();
  for (const std::string& s : r.switches) o.engine.assign(s, "--switch");
  // A bad expression, or one that selects nothing, is refused before anything runs.
  o.case_filter = r.filter;
  if (!o.case_filter.empty()) plan_sweeps(probes, o);
  if (o.adapter) check_adapter_takes_cases(probes, o);
  return o;
}

void validate_for_device(const RunOptions& o, std::size_t device_memory) {
  if (o.device_budget > device_memory)
    throw UsageError("--device-budget " + std::to_string(o.device_budget) + " is larger than the device (" +
                     std::to_string(device_memory) + " bytes of memory)");
}

nlohmann::json options_json(const RunOptions& o) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const Shape& s : o.shapes) shapes.push_back(s.to_json());
  std::vector<std::string> formats;
  for (auto f : o.formats) formats.emplace_back(kernels::to_string(f));
  nlohmann::json j{{"shapes", shapes},
                   {"m", o.ms},
                   {"weight_formats", formats},
                   {"modes", o.modes},
                   {"l2", measure::to_string(o.measure.l2)},
                   {"allocator", o.allocator == DeviceAllocator::Mode::caching ? "caching" : "plain"},
                   {"kernel_timing", o.measure.kernel_timing},
                   {"warmup", o.measure.warmup},
                   {"min_samples", o.measure.stopping.min_samples},
                   {"max_noise", o.measure.stopping.max_noise},
                   {"min_time_s", o.measure.stopping.min_time_s},
                   {"timeout_s", o.measure.stopping.timeout_s},
                   {"max_samples", o.measure.stopping.max_samples},
                   {"host_samples", o.measure.host_samples},
                   {"device", o.device},
                   {"device_source", o.device_source},
                   {"devices", o.devices},
                   {"seed", o.seed},
                   {"copy_bytes", o.copy_bytes},
                   {"repeat", o.repeat},
                   {"engines", o.engines},
                   {"barrier_reps", o.barrier_reps},
                   {"max_layers", o.max_layers},
                   {"telemetry", o.telemetry},
                   {"histogram", o.histogram},
                   {"hot_share", o.hot_share},
                   {"device_budget", o.device_budget},
                   {"stream_blocker", o.measure.block_during_enqueue},
                   {"peer", o.peer == Peer::cublas ? "cublas" : "none"},
                   {"peer_required", o.peer_required},
                   {"engine", o.engine.to_json()},
                   {"mutation", o.mutation ? nlohmann::json(std::string(info(*o.mutation).name))
                                           : nlohmann::json(nullptr)}};
  // Only when given: reports of unfiltered runs keep the options they always had.
  if (!o.case_filter.empty()) j["filter"] = o.case_filter;
  if (!o.exchanges.empty()) j["exchanges"] = o.exchanges;
  if (o.adapter) j["engine_adapter"] = o.adapter->to_json();  // absent: moebench's own engine
  return j;
}

int exit_code_for(const report::Report& r) {
  switch (r.overall()) {
    case report::Verdict::pass:
    case report::Verdict::inconclusive: return to_int(ExitCode::ok);
    case report::Verdict::fail: return to_int(ExitCode::check_failed);
    case report::Verdict::error: {
      // Only errors of the machine (not enough device memory): the environment exit code.
      for (const report::CaseResult& c : r.cases)
        if (c.verdict == report::Verdict::error && !report::metadata_flag(c.evidence, "/environment", false))
          return to_int(ExitCode::probe_error);
      return to_int(ExitCode::environment);
    }
  }
  return to_int(ExitCode::probe_error);
}

std::vector<std::string> ep_worker_arguments(const RunRequest& request) {
  RunRequest w = request;
  w.probes.clear();
  w.devices.clear();
  w.output.clear();
  w.in_process = true;
  w.quiet = true;
  w.repeat = 1;  // the launcher repeats; its workers run each repetition once
  w.case_total = 0;  // their cases reach the user through the launcher
  w.progress_fd = 2;
  w.event_fd = -1;  // their cases reach the launcher through their own reports
  return run_arguments(w);
}

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
  if (!r.assume_routing.empty()) a.insert(a.end(), {"--assume-routing", r.assume_routing});
  if (!r.ms.empty()) a.insert(a.end(), {"--m", join(r.ms)});
  if (!r.weight_formats.empty()) a.insert(a.end(), {"--weight-format", join(r.weight_formats)});
  if (!r.modes.empty()) a.insert(a.end(), {"--mode", join(r.modes)});
  if (!r.exchanges.empty()) a.insert(a.end(), {"--exchange", join(r.exchanges)});
  a.insert(a.end(), {"--l2", r.l2, "--allocator", r.allocator, "-o", r.output, "--format", r.format,
                     "--min-samples", num(r.min_samples), "--max-noise", num(r.max_noise_pct),
                     "--min-time", num(r.min_time_s), "--timeout", num(r.timeout_s),
                     "--max-samples", num(r.max_samples), "--host-samples", num(r.host_samples),
                     "--warmup", num(r.warmup),
                     "--seed", num(r.seed),
                     "--copy-bytes", num(r.copy_bytes), "--repeat", num(r.repeat),
                     "--engines", num(r.engines), "--barrier-reps", num(r.barrier_reps),
                     "--max-layers", num(r.max_layers)});
  if (r.device) a.insert(a.end(), {"--device", num(*r.device)});
  if (!r.devices.empty()) a.insert(a.end(), {"--devices", r.devices});
  if (!r.mutation.empty()) a.insert(a.end(), {"--mutation", r.mutation});
  if (!r.engine.empty()) a.insert(a.end(), {"--engine", r.engine});
  for (const std::string& s : r.switches) a.insert(a.end(), {"--switch", s});
  if (!r.fixtures.empty()) a.insert(a.end(), {"--fixtures", r.fixtures});
  if (r.telemetry != "all") a.insert(a.end(), {"--telemetry", r.telemetry});
  if (r.histogram) a.push_back("--histogram");
  if (r.hot_share) a.insert(a.end(), {"--hot-share", num(*r.hot_share)});
  if (r.device_budget) a.insert(a.end(), {"--device-budget", num(*r.device_budget)});
  if (!r.peer.empty()) a.insert(a.end(), {"--peer", r.peer});
  if (r.peer_optional) a.push_back("--peer-optional");
  if (r.no_kernel_timing) a.push_back("--no-kernel-timing");
  if (r.no_stream_blocker) a.push_back("--no-stream-blocker");
  if (!r.filter.empty()) a.insert(a.end(), {"--filter", r.filter});
  if (r.case_total)
    a.insert(a.end(), {"--case-offset", num(r.case_offset), "--case-total", num(r.case_total),
                       "--progress-fd", num(r.progress_fd)});
  if (r.event_fd >= 0) a.insert(a.end(), {"--event-fd", num(r.event_fd)});
  if (r.in_process) a.push_back("--in-process");
  if (r.quiet) a.push_back("--quiet");
  return a;
}

}  // namespace moe::cli
