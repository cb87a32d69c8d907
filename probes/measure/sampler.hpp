#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/device.hpp"
#include "engine/device_allocator.hpp"
#include "engine/stream.hpp"
#include "probes/measure/kernel_activity.hpp"
#include "probes/measure/l2_flush.hpp"
#include "probes/measure/stopping_rule.hpp"
#include "probes/measure/stream_blocker.hpp"
#include "reports/report.hpp"

namespace moe {
class GpuClocks;
}

namespace moe::measure {

// Knobs of every measurement; the CLI maps its options onto these.
struct MeasureOptions {
  StoppingRule stopping;
  L2Mode l2 = L2Mode::cold;   // flush L2 before each sample
  bool kernel_timing = true;  // CUPTI kernel time and count per sample
  int warmup = 1;             // untimed runs first: module load, lazy init, first-touch
  bool block_during_enqueue = true;  // hold the stream while enqueueing (see StreamBlocker)
  // Host pass, with kernel timing only: after the main loop, up to this many samples with
  // CUPTI off give the host enqueue time (never more than the main loop took, so a
  // measurement takes at most about twice as long). 100 pins a median and p10/p90 of a
  // jittery host clock without making short GPU samples pay for a long pass.
  std::size_t host_samples = 100;
};

// What one measurement may change from the run's options: a probe that needs an exact sample
// count, or no stream blocker (its work may block the host inside the enqueue, and a blocked
// stream would then deadlock with it). Everything else stays the run's.
struct MeasureOverrides {
  std::optional<StoppingRule> stopping;
  std::optional<bool> block_during_enqueue;
  // With kernel timing: called after sampling with each main-loop sample's kernels, in sample
  // order (index-aligned with the measurement's kernel series), for probes that attribute
  // time to kernels. Never called without CUPTI.
  std::function<void(const std::vector<KernelRecord>&)> kernel_records;
  // The historic loop of probe barrier: this same loop with only its barrier replaced by the
  // engine's deferred synchronize (flush, CUPTI windows and clock reads unchanged).
  bool noop_barrier = false;
};

// The timing loop (docs/design/measurement.md) every probe shares. One per run: it owns the L2
// flush buffer, the CUPTI recorder and the clock reader.
class Sampler {
 public:
  Sampler(const Device& device, DeviceAllocator& allocator, const MeasureOptions& options);
  ~Sampler();

  // Times `enqueue`, which must only enqueue work on `stream`, until the stopping rule ends
  // sampling. `label` names the NVTX range of the whole measurement.
  report::Measurement measure(Stream& stream, const std::string& label,
                              const std::function<void()>& enqueue,
                              const MeasureOverrides& overrides = {});

  // The barrier between samples: always the real drain, except under the mutation that
  // restores the historic no-op barrier (probe `barrier` proves it matters).
  void barrier(Stream& stream, bool noop = false);

  const MeasureOptions& options() const { return options_; }

 private:
  struct Sample;
  // One sample (docs/design/measurement.md), alike in the main loop and host pass; `range` names
  // its NVTX range after `label`. `kernels`: take the CUPTI records of its window.
  // `records`: keep each kernel's name and interval too. `observe`: time the L2 canary after
  // the flush (l2_observation.hpp), outside the window.
  void take_sample(Stream& stream, const std::string& label, const char* range,
                   const std::function<void()>& enqueue, bool block, bool kernels, bool records,
                   bool noop, bool observe, Sample& s);
  // Host enqueue times of `samples` more samples with CUPTI not recording.
  std::vector<double> host_pass(Stream& stream, const std::string& label,
                                const std::function<void()>& enqueue, bool block, bool noop,
                                std::size_t samples);

  MeasureOptions options_;
  std::unique_ptr<L2Flusher> flusher_;
  std::unique_ptr<KernelActivity> activity_;
  std::unique_ptr<StreamBlocker> blocker_;
  std::unique_ptr<GpuClocks> clocks_;
};

}  // namespace moe::measure
