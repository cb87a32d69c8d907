#pragma once
// The polling loop of the communicator's watchdog (engine/ep/nccl/communicator.hpp), apart
// from NCCL so that its deadline is tested on the CPU: poll a state until it is done, with
// sleeps growing from 5 us to 1 ms, and give up at the deadline. Without the watchdog (the
// mutation ep-no-watchdog) there is no deadline: the wait lasts as long as the state stays
// pending, as in an engine without one, and only the launcher's deadline ends it.
//
// A wait whose first poll finds the state done costs one poll and no sleep; `paused_us`, when
// given, gets the time from the first poll to the return of a wait that found it pending (0
// otherwise), so a caller timing around the wait can tell host sleeps inside its figure.
#include <chrono>
#include <functional>

namespace moe::ep {

enum class WaitState { done, pending, failed };
enum class WaitOutcome { done, failed, timed_out };

WaitOutcome watched_wait(const std::function<WaitState()>& state, std::chrono::milliseconds timeout,
                         bool watchdog, double* paused_us = nullptr);

}  // namespace moe::ep
