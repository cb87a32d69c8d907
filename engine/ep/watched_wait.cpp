#include "engine/ep/watched_wait.hpp"

#include <algorithm>
#include <thread>

namespace moe::ep {

WaitOutcome watched_wait(const std::function<WaitState()>& state, std::chrono::milliseconds timeout,
                         bool watchdog) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(5);
  for (;;) {
    switch (state()) {
      case WaitState::done: return WaitOutcome::done;
      case WaitState::failed: return WaitOutcome::failed;
      case WaitState::pending: break;
    }
    if (watchdog && std::chrono::steady_clock::now() >= deadline) return WaitOutcome::timed_out;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace moe::ep
