#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/device.hpp"
#include "engine/device_allocator.hpp"
#include "probes/measure/sampler.hpp"
#include "probes/run_options.hpp"
#include "probes/sweep.hpp"
#include "reports/report.hpp"

namespace moe {

// What a probe sees while it runs, in the manner of nvbench's `state`: the options, the device,
// the allocator and the sampler, and a sink for its results (written to the report at once).
class ProbeState {
 public:
  using CaseSink = std::function<void(report::CaseResult)>;
  // Told as each declared case starts: its place among points() (0-based) and the point.
  using CaseStart = std::function<void(std::size_t index, const SweepPoint&)>;
  // Takes a section of the report's environment block (key, value): the expert-parallel
  // probes' per-rank environment, `ranks`.
  using EnvironmentSink = std::function<void(const std::string&, nlohmann::json)>;

  ProbeState(std::string probe, const RunOptions& options, const Device& device,
             DeviceAllocator& allocator, measure::Sampler& sampler, CaseSink sink, int rep = 0)
      : probe_(std::move(probe)), options_(options), device_(&device), allocator_(&allocator),
        sampler_(&sampler), sink_(std::move(sink)), rep_(rep) {}
  // For a probe that runs on the host alone (ProbeInfo::needs_device false): no device is
  // opened, and device(), allocator() and sampler() raise.
  ProbeState(std::string probe, const RunOptions& options, CaseSink sink, int rep = 0)
      : probe_(std::move(probe)), options_(options), sink_(std::move(sink)), rep_(rep) {}

  const RunOptions& options() const { return options_; }
  const Device& device() const { return *on_device(device_); }
  DeviceAllocator& allocator() { return *on_device(allocator_); }
  measure::Sampler& sampler() { return *on_device(sampler_); }

  // A result pre-filled with this probe's name, the seed, any active mutation and the evidence
  // the probe must prove (probes/evidence_rules.cpp); with --repeat, the case name carries the
  // repetition ("cycle#3") so keys stay unique.
  report::CaseResult new_case(std::string name) const;
  // The cases this probe's repetition runs, from its declared sweep (probes/sweep.hpp) with
  // --filter applied, in order; empty for a probe that decides its cases as it runs.
  const std::vector<SweepPoint>& points() const;
  // Starts the case of `point` (one of points()): tells the runner (progress), and returns the
  // result labelled as new_case and moe_case label it (shape, format, M, mode, parameters).
  report::CaseResult start_case(const SweepPoint& point);
  void on_case_start(CaseStart start) { start_ = std::move(start); }
  // Hands a finished case to the report (which is rewritten on disk at once).
  void add_case(report::CaseResult result) { sink_(std::move(result)); }
  // Sets environment.<key> of the report; without a sink (a test's state) it is dropped.
  void set_environment_sink(EnvironmentSink sink) { environment_sink_ = std::move(sink); }
  void add_environment(const std::string& key, nlohmann::json value) {
    if (environment_sink_) environment_sink_(key, std::move(value));
  }

 private:
  template <class T>
  T* on_device(T* p) const {
    if (!p) no_device();
    return p;
  }
  [[noreturn]] void no_device() const;

  std::string probe_;
  const RunOptions& options_;
  const Device* device_ = nullptr;
  DeviceAllocator* allocator_ = nullptr;
  measure::Sampler* sampler_ = nullptr;
  CaseSink sink_;
  EnvironmentSink environment_sink_;
  int rep_;  // which repetition of the probe (0-based) when the run repeats it
  CaseStart start_;
  mutable std::optional<std::vector<SweepPoint>> points_;  // enumerated on first use
};

// How a probe takes an engine built by an adapter (--engine; include/moebench/engine_abi.h):
// whether it drives one, the optional capabilities its checks need (MOEBENCH_CAP_* bits), or
// why it cannot. Checked before anything runs (probes/adapter_requirements.hpp).
struct ExternalEngineUse {
  bool runs = false;
  std::uint64_t needs = 0;
  // When it cannot: why, one clause; empty: it drives moebench's own engine only, so far.
  std::string_view why_not{};
};

struct ProbeInfo {
  std::string_view name;
  std::string_view description;  // one line, shown by `moebench list`
  void (*run)(ProbeState&);
  // Its cases as axes: what it runs, filters, lists and counts. Null: it decides its cases as
  // it runs (the expert-parallel probes: the exchanges the NCCL library offers, the ranks).
  const SweepDeclaration* sweep;
  bool in_default_suite;
  bool histogram = false;  // writes routing histograms (per-expert counts) when asked (--histogram)
  int min_gpus = 1;        // the expert-parallel probes need two; selftest skips them on fewer
  // Non-empty: why this build cannot run it (built without NCCL); selftest skips it.
  std::string_view not_built{};
  ExternalEngineUse external{};
  // False: it runs on the host alone; a run of such probes alone opens no device and needs no
  // GPU (the test-only probes below).
  bool needs_device = true;
};

// Every probe moebench has, in the order the default suite runs them.
std::span<const ProbeInfo> all_probes();
// The test-only probes: never listed, in no suite or selftest, run only when named. They
// measure nothing; they exist so the CPU tests can drive the real runner (child processes,
// signals, the report on disk) on a machine without a GPU. See docs/design/measurement.md.
std::span<const ProbeInfo> test_probes();
// Raises UsageError listing the valid probe names (all_probes()) when `name` is neither one of
// them nor a test-only probe.
const ProbeInfo& probe_by_name(std::string_view name);

}  // namespace moe
