#pragma once
// The report model, schema version 1. Field-by-field documentation: reports/SCHEMA.md.
// Every struct converts to and from JSON losslessly (tested by a round trip).
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/statistics.hpp"

namespace moe::report {

inline constexpr int kSchemaVersion = 1;
inline constexpr const char* kSchemaName = "moebench.report";

enum class Verdict { pass, fail, inconclusive, error };
std::string to_string(Verdict v);
Verdict verdict_from_string(const std::string& s);  // throws UsageError naming valid values
// Worse verdicts rank higher: pass < inconclusive < fail < error.
int severity(Verdict v);

// What the sampler observed of the L2 after its flush, on a subset of the main loop's samples:
// a canary of lines touched just before the flush and timed load by load after it
// (docs/design/measurement.md). The figure a cold measurement is judged by, rather than the
// flush having been asked for.
struct L2Observed {
  std::size_t samples_observed = 0;
  std::size_t observe_every = 0;          // the first sample, then every this many
  std::size_t lines = 0;                  // canary lines a sample
  std::size_t flushes_unfinished = 0;     // observed samples that began before their flush ended
  double evicted_fraction_median = 0;     // of the canary lines, over the observed samples
  double evicted_fraction_min = 0;
  double cold_load_cycles_median = 0;     // a canary load after the flush
  double hot_load_cycles_median = 0;      // the same load again: an L2 hit
};

// One timed configuration: per-sample series and their summaries (docs/design/measurement.md).
struct Measurement {
  std::vector<double> gpu_time_us;     // event to event around the enqueue
  std::vector<double> host_time_us;    // host clock around the enqueue, CUPTI not recording
  // The same clock in the kernel-timed samples (CUPTI recording), index-aligned with
  // gpu_time_us; empty without kernel timing, and in reports written before the host pass.
  std::vector<double> host_time_with_cupti_us;
  std::vector<double> kernel_time_us;  // CUPTI: sum of kernel durations in the window
  // CUPTI: time at least one kernel ran (union of the intervals; below the sum when kernels
  // overlap); empty in reports written before it existed.
  std::vector<double> kernel_busy_us;
  std::vector<double> kernel_count;    // CUPTI: kernels in the window
  std::vector<double> sm_clock_mhz;    // SM clock read after each sample (0 = unknown)
  std::vector<bool> throttled;         // a clock-limiting reason was active for the sample
  std::string l2_mode;                 // "cold" (flushed before each sample) or "hot"
  std::string stop_reason;             // which stopping rule ended sampling
  // Samples preceded by an L2 flush in the main loop; absent (nullopt) in reports written
  // before it was counted. A cold figure needs one per sample (probe bandwidth checks it).
  std::optional<std::size_t> l2_flushes;
  // The flush observed (absent without a flush, and in reports written before it was).
  std::optional<L2Observed> l2_observed;
  double total_gpu_time_s = 0;
  bool kernel_timing = false;          // CUPTI series present
  std::vector<std::string> throttle_reasons;  // distinct reasons seen

  Stats gpu_time() const;
  Stats host_time() const;
  Stats host_time_with_cupti() const;
  Stats kernel_time() const;
  Stats kernel_busy() const;
  std::size_t samples() const { return gpu_time_us.size(); }
  std::size_t throttled_samples() const;
  // "3 of 40 samples ran with the clocks throttled", or "" when none did.
  std::string throttling_note() const;
  // Per sample, the time kernels ran: the busy time (union) where recorded, else the summed
  // durations (older reports), which count kernels that overlap under PDL twice.
  const std::vector<double>& time_in_kernels_us() const {
    return kernel_busy_us.empty() ? kernel_time_us : kernel_busy_us;
  }
  // The host times of the samples gpu_time_us came from, index-aligned with it.
  const std::vector<double>& main_loop_host_time_us() const;
  // Whether host_time_us paid CUPTI's per-launch cost: kernel-timed reports from before the
  // host pass, which have no host_time_with_cupti_us.
  bool host_time_includes_cupti() const { return kernel_timing && host_time_with_cupti_us.empty(); }
};

struct Metric {
  double value = 0;
  std::string unit;
};

struct Check {
  std::string name;
  bool passed = false;
  std::string detail;  // the evidence in words: what was expected, what was seen
};

// One result: a probe over one (shape, M, format, mode) or a probe-specific case name.
struct CaseResult {
  std::string probe;
  std::string name;                 // case name within the probe ("read", "graph", ...)
  std::optional<std::string> shape;
  std::optional<int> m;
  std::optional<std::string> format;
  std::optional<std::string> mode;
  std::optional<std::string> mutation;  // fault injected for this case, if any
  // Shape::fingerprint() of the shape the case ran: every dimension and routing parameter, so
  // two shapes under one name never share a key. Absent in reports from before it existed.
  std::optional<std::string> shape_fingerprint;
  std::uint64_t seed = 0;
  // Starts inconclusive: only conclude() (reports/verdict.hpp) turns it into PASS, and only
  // when every check passed and every required piece of evidence was proven.
  Verdict verdict = Verdict::inconclusive;
  std::string reason;               // one line on why the verdict
  std::map<std::string, Metric> metrics;
  std::map<std::string, Measurement> measurements;
  std::vector<Check> checks;
  nlohmann::json evidence = nlohmann::json::object();
  // Names of evidence fields that must be `true` for a PASS: what the probe must prove
  // happened (the hazard forced, the path reached). Declared by the probe when the case is made.
  std::vector<std::string> required_evidence;
  nlohmann::json parameters = nlohmann::json::object();  // what `repro` needs to rerun it

  // Stable identity for comparison across reports: probe/name/shape/m/format/mode/mutation,
  // then /dims=FINGERPRINT where the shape's fingerprint is recorded. Without the fingerprint
  // (with_fingerprint false) it is the key of reports from before it: matching by shape name.
  std::string key(bool with_fingerprint = true) const;
  // Declares evidence a PASS needs (each name once, in order).
  void require(std::initializer_list<const char*> names);
  // Records required evidence `name` as proven or not; `why_not` explains a false one (it is
  // kept in evidence.why_not.<name> and becomes the INCONCLUSIVE reason).
  void prove(const std::string& name, bool proven, const std::string& why_not = "");
  // Sets verdict and reason from the checks and the required evidence (reports/verdict.hpp):
  // `pass_reason` is used only when the verdict comes out PASS. Call it after the last check.
  void conclude(const std::string& pass_reason);
  // The older spelling: the reason already set is the pass reason. A probe that declares no
  // evidence PASSes on its checks alone (and selftest does not accept it as a clean row).
  void conclude_from_checks() { conclude(reason); }
};

struct Report {
  int schema_version = kSchemaVersion;
  nlohmann::json tool = nlohmann::json::object();
  nlohmann::json invocation = nlohmann::json::object();
  nlohmann::json environment = nlohmann::json::object();
  nlohmann::json options = nlohmann::json::object();
  std::vector<CaseResult> cases;
  nlohmann::json extra = nlohmann::json::object();  // command-specific sections (selftest...)

  // The worst verdict over all cases (pass when there are none).
  Verdict overall() const;
};

void to_json(nlohmann::json& j, const Stats& s);
void from_json(const nlohmann::json& j, Stats& s);
void to_json(nlohmann::json& j, const Measurement& m);
void from_json(const nlohmann::json& j, Measurement& m);
void to_json(nlohmann::json& j, const Metric& m);
void from_json(const nlohmann::json& j, Metric& m);
void to_json(nlohmann::json& j, const Check& c);
void from_json(const nlohmann::json& j, Check& c);
void to_json(nlohmann::json& j, const CaseResult& c);
void from_json(const nlohmann::json& j, CaseResult& c);
void to_json(nlohmann::json& j, const Report& r);
void from_json(const nlohmann::json& j, Report& r);

// Reads and validates a report file. Raises UsageError naming the file and the problem
// (missing, malformed JSON, not a moebench report, newer schema, wrong field type).
Report load_report(const std::string& path);

}  // namespace moe::report
