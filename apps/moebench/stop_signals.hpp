#pragma once
#include <signal.h>

#include <string>

namespace moe::cli {

// The signals that end a run: SIGINT (Ctrl-C), SIGTERM (timeout, CI cancellation, Slurm,
// container runtimes) and SIGHUP (the controlling terminal closed). While an instance lives,
// each is recorded instead of ending the process, so the run can write its report, say where it
// stopped and exit with 128 + the signal. The first signal received is the one the run reports.
// One instance at a time; the destructor puts the previous handlers back.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received, 0 while none has been.
  int received() const;
  // Readable from the first signal on (a self-pipe), for poll() beside other descriptors.
  int wake_fd() const { return wake_[0]; }

 private:
  int wake_[2] = {-1, -1};
  struct sigaction previous_[3] = {};
};

// "SIGTERM" for SIGTERM; "signal N" for one without a name here.
std::string signal_name(int signal);
// The conventional exit code of a process ended by `signal`: 128 + its number.
constexpr int exit_code_for_signal(int signal) { return 128 + signal; }

}  // namespace moe::cli
