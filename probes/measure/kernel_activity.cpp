#include "probes/measure/kernel_activity.hpp"

#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/errors.hpp"
#include "probes/measure/stream_blocker.hpp"

namespace moe::measure {

namespace {
// CUPTI calls back through plain functions with no user pointer; this is the one recorder.
std::atomic<KernelActivity*> g_recorder{nullptr};
constexpr std::size_t kBufferBytes = 1 << 20;
constexpr std::size_t kAlign = 8;

void check_cupti(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) {
    const char* msg = nullptr;
    cuptiGetResultString(r, &msg);
    throw Error(ExitCode::environment,
                std::string(call) + " failed: " + (msg ? msg : "unknown CUPTI error"));
  }
}
}  // namespace

// CUPTI hands buffers back through plain functions with no user pointer.
struct CuptiCallbacks {
  static void CUPTIAPI requested(std::uint8_t** buffer, std::size_t* size,
                                 std::size_t* max_records) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
  }
  static void CUPTIAPI completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                 std::size_t valid_size) {
    if (KernelActivity* self = g_recorder.load()) self->consume(buffer, valid_size);
    std::free(buffer);
  }
};

KernelActivity::KernelActivity() {
  KernelActivity* expected = nullptr;
  if (!g_recorder.compare_exchange_strong(expected, this))
    throw Error(ExitCode::probe_error, "only one KernelActivity recorder may exist at a time");
  try {
    check_cupti(cuptiActivityRegisterCallbacks(&CuptiCallbacks::requested, &CuptiCallbacks::completed),
                "cuptiActivityRegisterCallbacks");
    // CONCURRENT_KERNEL records kernels without serialising them (KIND_KERNEL would).
    check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  } catch (...) {
    g_recorder.store(nullptr);
    throw;
  }
}

KernelActivity::~KernelActivity() {
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  {
    std::lock_guard lock(mutex_);
    collecting_ = false;
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  g_recorder.store(nullptr);
}

void KernelActivity::begin_window(bool keep_records) {
  resume();
  check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard lock(mutex_);
  current_ = Window{};
  intervals_.clear();
  collecting_ = true;
  keep_records_ = keep_records;
}

KernelActivity::Window KernelActivity::end_window() {
  check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard lock(mutex_);
  collecting_ = false;
  current_.kernel_busy_us = busy_time_us(intervals_);
  return current_;
}

void KernelActivity::pause() {
  if (paused_) return;
  check_cupti(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityDisable");
  paused_ = true;
}

void KernelActivity::resume() {
  if (!paused_) return;
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  paused_ = false;
}

void KernelActivity::consume(std::uint8_t* buffer, std::size_t valid_size) {
  std::lock_guard lock(mutex_);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (!collecting_ || record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    // The blocker spins while the host enqueues; it is harness, not work.
    if (k->name && std::strstr(k->name, StreamBlocker::kKernelName)) continue;
    current_.kernel_time_us += static_cast<double>(k->end - k->start) * 1e-3;
    intervals_.push_back({k->start, k->end});
    ++current_.kernel_count;
    if (keep_records_) current_.records.push_back({k->name ? k->name : "", k->start, k->end});
  }
}

}  // namespace moe::measure
