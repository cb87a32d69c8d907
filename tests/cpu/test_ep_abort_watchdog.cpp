// The watchdog thread that ends a blocked wait from outside it (engine/ep/abort_watchdog.hpp),
// with a fake blocking call: a wait that only returns when "abort" releases it, as a blocking
// NCCL call returns after ncclCommAbort. A wait that finishes in time is never aborted; a stuck
// one is aborted once at its deadline, and a failure reported meanwhile aborts it at once; an
// idle watchdog asks nothing.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/ep/abort_watchdog.hpp"

using namespace moe::ep;
using namespace std::chrono_literals;

namespace {

// A call that blocks until released (by the abort) or until `bound` (a stuck test must fail,
// not hang). Returns whether the abort released it.
class BlockingCall {
 public:
  bool block(std::chrono::milliseconds bound) {
    std::unique_lock<std::mutex> lock(mutex_);
    return released_cv_.wait_for(lock, bound, [&] { return released_; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("abort watchdog: a stuck blocking wait is aborted once at its deadline, naming it") {
  BlockingCall call;
  std::atomic<int> aborts{0};
  AbortWatchdog dog([] { return std::string(); }, [&] {
    ++aborts;
    call.release();
  });
  const auto t0 = std::chrono::steady_clock::now();
  bool released = false;
  {
    auto armed = dog.arm("grouped ncclSend/ncclRecv", 200ms);
    released = call.block(10s);
  }
  const double took = seconds_since(t0);
  CHECK(released);
  CHECK(took >= 0.2);
  CHECK(took < 2.0);
  std::this_thread::sleep_for(50ms);
  CHECK(aborts == 1);
  CHECK(dog.fired());
  CHECK(dog.reason() == "grouped ncclSend/ncclRecv did not finish within 0.2 s");
}

TEST_CASE("abort watchdog: a wait that returns in time is never aborted, however long after") {
  std::atomic<int> aborts{0};
  AbortWatchdog dog([] { return std::string(); }, [&] { ++aborts; });
  for (int i = 0; i < 3; ++i) {
    auto armed = dog.arm("a timed exchange", 150ms);
    std::this_thread::sleep_for(20ms);  // the work, done well within the deadline
  }
  std::this_thread::sleep_for(400ms);  // past every deadline, disarmed
  CHECK(aborts == 0);
  CHECK_FALSE(dog.fired());
  CHECK(dog.reason().empty());
}

TEST_CASE("abort watchdog: a failure reported during the wait aborts at once, in its words") {
  BlockingCall call;
  std::atomic<int> aborts{0};
  const auto t0 = std::chrono::steady_clock::now();
  AbortWatchdog dog(
      [&] { return seconds_since(t0) > 0.05 ? std::string("NCCL error remote process exited") : std::string(); },
      [&] {
        ++aborts;
        call.release();
      });
  {
    auto armed = dog.arm("ncclAlltoAll", 30s);
    CHECK(call.block(10s));
  }
  CHECK(seconds_since(t0) < 5.0);  // long before the 30 s deadline
  CHECK(aborts == 1);
  CHECK(dog.reason() == "ncclAlltoAll: NCCL error remote process exited");
}

TEST_CASE("abort watchdog: idle it polls nothing; one wait at a time") {
  std::atomic<int> polls{0};
  AbortWatchdog dog([&] {
    ++polls;
    return std::string();
  }, [] {});
  std::this_thread::sleep_for(100ms);
  CHECK(polls == 0);
  {
    auto armed = dog.arm("a step", 1s);
    std::this_thread::sleep_for(30ms);
    CHECK(polls > 0);
    CHECK_THROWS_AS((void)dog.arm("another step", 1s), std::logic_error);
  }
  std::this_thread::sleep_for(20ms);  // a poll that began before the disarm has ended
  const int after = polls;
  std::this_thread::sleep_for(100ms);
  CHECK(polls == after);
}
