#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "probes/measure/busy_time.hpp"

namespace moe::measure {

// Kernel time inside a measurement window from CUPTI activity records: the sum of the
// durations of the kernels that ran, the time at least one ran (their union: kernels launched
// with programmatic dependent launch overlap), and how many, so launch gaps show as GPU-event
// time minus busy time. CUPTI's activity API is process-wide, so only one recorder may exist
// at a time.
// One kernel that ran in a window, for probes that attribute time to kernels (stages).
struct KernelRecord {
  std::string name;  // as CUPTI gives it (mangled)
  std::uint64_t start_ns = 0, end_ns = 0;
};

class KernelActivity {
 public:
  struct Window {
    double kernel_time_us = 0;  // sum of durations
    double kernel_busy_us = 0;  // union of [start, end): see busy_time.hpp
    std::size_t kernel_count = 0;
    std::vector<KernelRecord> records;  // only when the window was begun with keep_records
  };

  KernelActivity();   // raises moe::Error if CUPTI cannot be enabled (or one already exists)
  ~KernelActivity();  // disables recording and drops buffered records
  KernelActivity(const KernelActivity&) = delete;
  KernelActivity& operator=(const KernelActivity&) = delete;

  // Call with the stream drained: discards everything recorded so far (warm-up, L2 flush).
  // `keep_records`: the window also keeps each kernel's name and interval (a string copy a
  // kernel, so only the probes that need them ask).
  void begin_window(bool keep_records = false);
  // Call with the stream drained: forces CUPTI to hand over every record since begin_window.
  Window end_window();

  // Stops recording until resume() or the next begin_window(): CUPTI then adds nothing to a
  // launch, which is what the sampler's host pass needs to time the enqueue alone. Call with
  // the stream drained. begin_window() resumes too, so a host pass cut short by an error
  // cannot leave later measurements without kernel records.
  void pause();
  void resume();

 private:
  friend struct CuptiCallbacks;
  void consume(std::uint8_t* buffer, std::size_t valid_size);

  std::mutex mutex_;
  Window current_;
  std::vector<KernelInterval> intervals_;  // of the current window, for its busy time
  bool collecting_ = false;
  bool keep_records_ = false;
  bool paused_ = false;  // only the sampling thread reads or writes it
};

}  // namespace moe::measure
