#include "probes/measure/sampler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_event.hpp"
#include "common/gpu_clocks.hpp"
#include "engine/fault_injection.hpp"
#include "probes/measure/nvtx_range.hpp"

namespace moe::measure {

namespace {
using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string pci_bus_id(int device) {
  char id[32] = {};
  MOE_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, device));
  return id;
}
}  // namespace

// One sample whose GPU time may not be readable yet (only under the no-op barrier mutation).
struct Sampler::Sample {
  CudaEvent start, stop;
  double host_us = 0;
  KernelActivity::Window kernels;
  bool read = false;
  bool flushed = false;  // an L2 flush preceded the window
};

Sampler::Sampler(const Device& device, DeviceAllocator& allocator, const MeasureOptions& options)
    : options_(options), clocks_(std::make_unique<GpuClocks>(pci_bus_id(device.index))) {
  options_.stopping.validate();
  if (options_.host_samples == 0)
    throw UsageError("host samples must be at least 1 (the host pass times the enqueue)");
  if (options_.l2 == L2Mode::cold) flusher_ = std::make_unique<L2Flusher>(device, allocator);
  if (options_.kernel_timing) {
    // CUPTI takes one subscriber per process: under Nsight or compute-sanitizer it is taken.
    // Measure without kernel time then (the report says so) rather than not at all.
    try {
      activity_ = std::make_unique<KernelActivity>();
    } catch (const Error& e) {
      std::fprintf(stderr, "moebench: kernel timing off: %s\n", e.what());
    }
  }
  blocker_ = std::make_unique<StreamBlocker>();
}

Sampler::~Sampler() = default;

void Sampler::barrier(Stream& stream, bool noop) {
  if (noop || mutation_active(Mutation::noop_timing_barrier))
    stream.synchronize();  // the historic bug: a deferred no-op
  else
    stream.drain();
}

void Sampler::take_sample(Stream& stream, const std::string& label, const char* range,
                          const std::function<void()>& enqueue, bool block, bool kernels,
                          bool records, bool noop, bool observe, Sample& s) {
  // The historic cache-measuring loop skipped the flush (probe bandwidth must notice).
  s.flushed = flusher_ && !mutation_active(Mutation::hot_cache_timing);
  const bool observing = observe && s.flushed;
  if (observing) flusher_->touch_canary(stream.handle());  // in the L2 when the flush begins
  if (s.flushed) flusher_->flush(stream.handle());
  barrier(stream, noop);  // nothing from before (flush, last sample) may overlap the window
  if (observing) {
    // Where the sample's first load would be: the canary says what the flush left in the L2.
    flusher_->observe(stream.handle());
    barrier(stream, noop);
  }
  if (kernels) activity_->begin_window(records);
  {
    NvtxRange sample_range(label + range);
    if (block) blocker_->block(stream.handle());
    // Start the host clock irrespective of the blocked stream: it measures the enqueue alone.
    const auto t0 = Clock::now();
    s.start.record(stream.handle());
    enqueue();
    s.stop.record(stream.handle());
    s.host_us = micros(Clock::now() - t0);
    if (block) blocker_->release();
  }
  barrier(stream, noop);  // a real barrier: the next sample starts on an idle GPU
  if (block && blocker_->timed_out())
    throw Error(ExitCode::probe_error,
                label + ": the enqueue took longer than the stream blocker's 10 s timeout");
  if (kernels) s.kernels = activity_->end_window();
}

// CUPTI's activity API adds host work to every launch while it records, so the host times of
// the kernel-timed samples overstate the enqueue cost. A separate pass rather than alternate
// samples: switching CUPTI is a driver call and may make the next launch pay a one-time cost,
// which alternation would put in every other sample; one switch per measurement keeps the
// main loop, its stopping rule and its GPU and kernel series exactly as before. The host clock
// times the enqueue alone, so its samples need not interleave with the GPU's.
std::vector<double> Sampler::host_pass(Stream& stream, const std::string& label,
                                       const std::function<void()>& enqueue, bool block,
                                       bool noop, std::size_t samples) {
  activity_->pause();
  // Untimed, like the main loop's warm-up, in case the first launches after the switch pay
  // for it.
  for (int i = 0; i < options_.warmup; ++i) enqueue();
  stream.drain();
  std::vector<double> host_us;
  Sample s;
  for (std::size_t i = 0; i < samples; ++i) {
    take_sample(stream, label, "/host-sample", enqueue, block, false, false, noop, false, s);
    host_us.push_back(s.host_us);
  }
  stream.drain();  // the pass's events complete before they are reused or destroyed
  activity_->resume();
  return host_us;
}

report::Measurement Sampler::measure(Stream& stream, const std::string& label,
                                     const std::function<void()>& enqueue,
                                     const MeasureOverrides& overrides) {
  const StoppingRule& rule = overrides.stopping ? *overrides.stopping : options_.stopping;
  rule.validate();
  const bool block = overrides.block_during_enqueue.value_or(options_.block_during_enqueue);
  NvtxRange range(label);
  report::Measurement m;
  m.l2_mode = to_string(options_.l2);
  m.kernel_timing = activity_ != nullptr;

  for (int i = 0; i < options_.warmup; ++i) enqueue();
  stream.drain();
  if (flusher_) flusher_->begin_measurement();

  std::vector<std::unique_ptr<Sample>> pending;
  std::vector<double> gpu_s;  // samples whose events completed, for the stopping rule
  std::set<std::string> reasons;
  const auto began = Clock::now();

  auto read_ready = [&](Sample& s) {
    if (s.read) return;
    const cudaError_t status = cudaEventQuery(s.stop.handle());
    if (status == cudaErrorNotReady) return;  // still running: not an error
    // Anything else is the stream's fault (an illegal address in the timed work): report it
    // here, named, instead of polling on until the time limit.
    if (status != cudaSuccess) throw_cuda_error(status, "cudaEventQuery", __FILE__, __LINE__);
    s.read = true;
    gpu_s.push_back(s.stop.elapsed_ms_since(s.start) * 1e-3);
  };

  for (;;) {
    auto s = std::make_unique<Sample>();
    take_sample(stream, label, "/sample", enqueue, block, activity_ != nullptr,
                static_cast<bool>(overrides.kernel_records), overrides.noop_barrier,
                observed_sample(pending.size()), *s);
    // The clock is read after every sample; a throttled sample is flagged, not dropped.
    const auto sm = clocks_->sm_clock_mhz();
    const auto why = clocks_->throttle_reasons();
    m.sm_clock_mhz.push_back(sm ? *sm : 0.0);
    m.throttled.push_back(!why.empty());
    reasons.insert(why.begin(), why.end());
    read_ready(*s);
    pending.push_back(std::move(s));
    if (auto stop = should_stop(rule, gpu_s, micros(Clock::now() - began) * 1e-6)) {
      m.stop_reason = to_string(*stop);
      break;
    }
    // Under the no-op barrier nothing completes until the queue blocks; cap the loop anyway.
    if (pending.size() >= rule.max_samples) {
      m.stop_reason = to_string(StopReason::max_samples);
      break;
    }
  }
  // Measurement teardown always waits for real, so every event can be read.
  stream.drain();
  for (auto& s : pending) {
    const double gpu_us = s->stop.elapsed_ms_since(s->start) * 1e3;
    m.gpu_time_us.push_back(gpu_us);
    if (activity_) {
      m.host_time_with_cupti_us.push_back(s->host_us);
      m.kernel_time_us.push_back(s->kernels.kernel_time_us);
      m.kernel_busy_us.push_back(s->kernels.kernel_busy_us);
      m.kernel_count.push_back(static_cast<double>(s->kernels.kernel_count));
      if (overrides.kernel_records) overrides.kernel_records(s->kernels.records);
    } else {
      m.host_time_us.push_back(s->host_us);  // CUPTI was off: these are clean already
    }
    m.total_gpu_time_s += gpu_us * 1e-6;
  }
  m.l2_flushes = static_cast<std::size_t>(
      std::count_if(pending.begin(), pending.end(), [](const auto& s) { return s->flushed; }));
  if (flusher_) m.l2_observed = flusher_->collect();  // the stream drained above
  if (activity_)
    m.host_time_us = host_pass(stream, label, enqueue, block, overrides.noop_barrier,
                               std::min(options_.host_samples, pending.size()));
  m.throttle_reasons.assign(reasons.begin(), reasons.end());
  return m;
}

}  // namespace moe::measure
