#pragma once
// A thread that ends a blocked wait from outside it. On a blocking NCCL communicator an enqueue
// or a stream synchronize returns only when the work is done, so nothing in the waiting thread
// can give up on a peer that never comes; this thread watches instead. While a wait is armed
// it polls `failure` (ncclCommGetAsyncError, in words; empty while healthy) and, at a failure
// or at the wait's deadline, calls `abort` (ncclCommAbort, which makes the blocked call and the
// stuck kernels return) once, and keeps why. The waiting thread polls nothing itself, so the
// events around a timed exchange measure the exchange, not a poll loop's sleeps.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace moe::ep {

class AbortWatchdog {
 public:
  AbortWatchdog(std::function<std::string()> failure, std::function<void()> abort,
                std::chrono::microseconds poll = std::chrono::microseconds(1000));
  ~AbortWatchdog();  // stops and joins the thread; an armed wait is not aborted by it
  AbortWatchdog(const AbortWatchdog&) = delete;
  AbortWatchdog& operator=(const AbortWatchdog&) = delete;

  // One watched wait: armed from construction until destruction (when the wait returned).
  class Armed {
   public:
    ~Armed();
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;

   private:
    friend class AbortWatchdog;
    explicit Armed(AbortWatchdog& dog) : dog_(dog) {}
    AbortWatchdog& dog_;
  };
  // Arms for a wait named `what` of at most `timeout`. One wait at a time: arming while armed
  // throws std::logic_error.
  [[nodiscard]] Armed arm(const std::string& what, std::chrono::milliseconds timeout);

  // Whether it aborted, and why: "WHAT did not finish within N s" or "WHAT: FAILURE".
  bool fired() const;
  std::string reason() const;

 private:
  void run();
  void disarm();

  std::function<std::string()> failure_;
  std::function<void()> abort_;
  std::chrono::microseconds poll_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  bool armed_ = false;
  bool fired_ = false;
  std::string what_, reason_;
  std::chrono::milliseconds timeout_{0};
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace moe::ep
