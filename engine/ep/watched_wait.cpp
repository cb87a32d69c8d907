#include "engine/ep/watched_wait.hpp"

#include <algorithm>
#include <thread>

namespace moe::ep {

WaitOutcome watched_wait(const std::function<WaitState()>& state, std::chrono::milliseconds timeout,
                         bool watchdog, double* paused_us) {
  const auto first = std::chrono::steady_clock::now();
  const auto deadline = first + timeout;
  auto pause = std::chrono::microseconds(5);
  bool paused = false;
  const auto finish = [&](WaitOutcome outcome) {
    if (paused_us)
      *paused_us = paused ? std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - first).count()
                          : 0.0;
    return outcome;
  };
  for (;;) {
    switch (state()) {
      case WaitState::done: return finish(WaitOutcome::done);
      case WaitState::failed: return finish(WaitOutcome::failed);
      case WaitState::pending: break;
    }
    paused = true;
    if (watchdog && std::chrono::steady_clock::now() >= deadline) return finish(WaitOutcome::timed_out);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace moe::ep
