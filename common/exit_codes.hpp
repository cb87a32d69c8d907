#pragma once

namespace moe {

// The CLI's documented exit codes (README "Exit codes"). Fixed: CI scripts depend on them.
enum class ExitCode : int {
  ok = 0,             // every check passed
  check_failed = 1,   // a check failed: a bug reproduced, a regression
  usage = 2,          // usage or input error; nothing was run
  environment = 3,    // no GPU or driver, not enough device memory
  probe_error = 4,    // a probe raised an error
  // A run ended by a signal, 128 + its number as shells report it; the partial report was
  // written (apps/moebench/stop_signals.hpp).
  hangup = 129,       // SIGHUP: the controlling terminal closed
  interrupted = 130,  // SIGINT: Ctrl-C
  terminated = 143,   // SIGTERM: timeout, CI cancellation, Slurm, container runtimes
};

constexpr int to_int(ExitCode c) { return static_cast<int>(c); }

}  // namespace moe
