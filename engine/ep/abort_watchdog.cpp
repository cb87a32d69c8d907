#include "engine/ep/abort_watchdog.hpp"

#include <sstream>
#include <stdexcept>

namespace moe::ep {

namespace {
std::string seconds_text(std::chrono::milliseconds t) {
  std::ostringstream s;
  s.precision(3);
  s << static_cast<double>(t.count()) / 1000.0 << " s";
  return s.str();
}
}  // namespace

AbortWatchdog::AbortWatchdog(std::function<std::string()> failure, std::function<void()> abort,
                             std::chrono::microseconds poll)
    : failure_(std::move(failure)), abort_(std::move(abort)), poll_(poll), thread_([this] { run(); }) {}

AbortWatchdog::~AbortWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

AbortWatchdog::Armed AbortWatchdog::arm(const std::string& what, std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (armed_) throw std::logic_error("abort watchdog: '" + what + "' armed while '" + what_ + "' is");
    armed_ = true;
    what_ = what;
    timeout_ = timeout;
    deadline_ = std::chrono::steady_clock::now() + timeout;
  }
  changed_.notify_all();
  return Armed(*this);
}

AbortWatchdog::Armed::~Armed() { dog_.disarm(); }

void AbortWatchdog::disarm() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }
  changed_.notify_all();
}

bool AbortWatchdog::fired() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fired_;
}

std::string AbortWatchdog::reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}

void AbortWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || (armed_ && !fired_); });
    if (stop_) return;
    // Armed: poll the failure without the lock (it calls into NCCL), at most every poll_.
    const std::string what = what_;
    const auto deadline = deadline_;
    const auto timeout = timeout_;
    lock.unlock();
    const std::string failure = failure_();
    const bool late = std::chrono::steady_clock::now() >= deadline;
    lock.lock();
    if (stop_) return;
    if (!armed_ || what_ != what || deadline_ != deadline) continue;  // that wait returned
    if (failure.empty() && !late) {
      changed_.wait_for(lock, poll_, [&] { return stop_ || !armed_; });
      continue;
    }
    fired_ = true;
    reason_ = failure.empty() ? what + " did not finish within " + seconds_text(timeout) : what + ": " + failure;
    lock.unlock();
    abort_();  // outside the lock: it may take a while, and the waiter may disarm meanwhile
    lock.lock();
  }
}

}  // namespace moe::ep
