#pragma once
#include <thread>

#include "apps/moebench/live_report.hpp"
#include "apps/moebench/stop_signals.hpp"

namespace moe::cli {

// For a run that measures in this process: one case can take minutes, and whoever sent the
// signal (timeout, Slurm, a container runtime) sends SIGKILL a few seconds later, so the run
// cannot wait for the case to end. This thread waits for a stop signal; on one it has the live
// report record the interruption and be written (under the report's lock, so never half a
// case), says so on stderr and ends the process with 128 + the signal. The case in progress is
// dropped: it was not finished. The destructor stops the thread.
class ExitOnStopSignal {
 public:
  ExitOnStopSignal(const StopSignals& signals, LiveReport& report);
  ~ExitOnStopSignal();
  ExitOnStopSignal(const ExitOnStopSignal&) = delete;
  ExitOnStopSignal& operator=(const ExitOnStopSignal&) = delete;

 private:
  void wait_and_exit(const StopSignals& signals, LiveReport& report) const;

  int quit_[2] = {-1, -1};  // written by the destructor: the thread returns
  std::thread thread_;
};

}  // namespace moe::cli
