// The watchdog's wait apart from NCCL: done, failed or past the deadline with the watchdog, and
// the host time it polled for (what an eager exchange figure holds of host sleeps);
// without it (mutation ep-no-watchdog) no deadline at all, so a settle() on a silent peer
// hangs as an engine without a watchdog would. And a peer's wait on a stuck rank counts as
// entered before its enqueue, where a non-blocking communicator may already be waiting.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/ep/watched_wait.hpp"
#include "probes/ep_hang/stuck_peer_wait.hpp"

using namespace moe::ep;
using namespace std::chrono_literals;

namespace {

// Pending until `after` has passed, then `then`.
auto pending_for(std::chrono::milliseconds after, WaitState then) {
  const auto until = std::chrono::steady_clock::now() + after;
  return [until, then] { return std::chrono::steady_clock::now() < until ? WaitState::pending : then; };
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("with the watchdog: done, failed, or timed out at the deadline") {
  CHECK(watched_wait([] { return WaitState::done; }, 10ms, true) == WaitOutcome::done);
  CHECK(watched_wait([] { return WaitState::failed; }, 10ms, true) == WaitOutcome::failed);
  CHECK(watched_wait(pending_for(5ms, WaitState::done), 1000ms, true) == WaitOutcome::done);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(watched_wait([] { return WaitState::pending; }, 50ms, true) == WaitOutcome::timed_out);
  const double waited = seconds_since(t0);
  CHECK(waited >= 0.05);
  CHECK(waited < 1.0);
}

TEST_CASE("a wait reports the host time it polled for, and none when its first poll found it done") {
  double paused_us = -1;
  CHECK(watched_wait([] { return WaitState::done; }, 10ms, true, &paused_us) == WaitOutcome::done);
  CHECK(paused_us == 0.0);
  paused_us = -1;
  CHECK(watched_wait([] { return WaitState::failed; }, 10ms, true, &paused_us) == WaitOutcome::failed);
  CHECK(paused_us == 0.0);
  // Pending on the first poll only: it slept at least once, so the time is above 0.
  int polls = 0;
  CHECK(watched_wait([&] { return ++polls == 1 ? WaitState::pending : WaitState::done; }, 1000ms, true,
                     &paused_us) == WaitOutcome::done);
  CHECK(polls == 2);
  CHECK(paused_us > 0.0);
  CHECK(paused_us < 1e6);
  CHECK(watched_wait(pending_for(20ms, WaitState::done), 1000ms, true, &paused_us) == WaitOutcome::done);
  CHECK(paused_us >= 20e3);
  CHECK(watched_wait([] { return WaitState::pending; }, 30ms, true, &paused_us) == WaitOutcome::timed_out);
  CHECK(paused_us >= 30e3);
}

TEST_CASE("without the watchdog there is no deadline: the wait outlasts the timeout") {
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(watched_wait(pending_for(150ms, WaitState::done), 10ms, false) == WaitOutcome::done);
  CHECK(seconds_since(t0) >= 0.15);
  CHECK(watched_wait(pending_for(60ms, WaitState::failed), 10ms, false) == WaitOutcome::failed);
}

TEST_CASE("a peer is in the wait before its enqueue: a stuck enqueue is still the wait") {
  nlohmann::json mine{{"rank", 0}, {"entered_wait", false}};
  bool entered_when_enqueued = false;
  wait_on_stuck_peer(
      mine,
      [&] {
        entered_when_enqueued = mine["entered_wait"].get<bool>();
        throw std::runtime_error("rank 0: grouped ncclSend/ncclRecv did not finish within 0.010 s");
      },
      [] { FAIL("the wait after a failed enqueue must not run"); });
  CHECK(entered_when_enqueued);
  CHECK(mine["entered_wait"].get<bool>());
  CHECK_FALSE(mine.contains("finished"));
  CHECK(mine["error"].get<std::string>().find("rank 0: grouped") == 0);
  CHECK(mine["seconds"].get<double>() >= 0);
}

TEST_CASE("a wait that ends in the watchdog's abort is recorded with its error; one that finishes too") {
  nlohmann::json aborted{{"entered_wait", false}};
  wait_on_stuck_peer(aborted, [] {}, [] { throw std::runtime_error("rank 1: communicator aborted"); });
  CHECK(aborted["entered_wait"].get<bool>());
  CHECK(aborted["error"] == "rank 1: communicator aborted");
  nlohmann::json finished{{"entered_wait", false}};
  wait_on_stuck_peer(finished, [] {}, [] {});
  CHECK(finished["finished"].get<bool>());
  CHECK_FALSE(finished.contains("error"));
}
