#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/moebench/stop_signals.hpp"

namespace moe::cli {

// Runs this same moebench binary with `args` in a child process, its stdout and stderr going to
// `log_path`, and waits. Returns the exit code, or 128 + signal when the child was killed.
// Used where one run's fault (a sticky CUDA error, a crash) must not take the caller down.
// `stderr_as_fd` >= 0: the child also holds this process's stderr as that descriptor, for lines
// the user must see while it runs (the run's progress).
int run_self(const std::vector<std::string>& args, const std::string& log_path,
             int stderr_as_fd = -1);

// How a child run of run_self_streaming ended.
struct ChildEnd {
  int exit_code = 0;     // or 128 + signal when it was killed
  int forwarded = 0;     // the stop signal passed on to it; 0: none came
  bool killed = false;   // it outlived kStopGrace after the signal and was sent SIGKILL
  bool reaped = true;    // false: not even SIGKILL ended it within kKillWait; left behind
};

// After a stop signal is passed on, how long the child has to write its report and exit before
// SIGKILL, and how long its end is then awaited.
inline constexpr std::chrono::seconds kStopGrace{10};
inline constexpr std::chrono::seconds kKillWait{5};

// run_self for a probe's child: the child also holds the write end of a pipe as `events_fd`
// (it is told so by its arguments), and every line it writes there reaches `on_event` as soon
// as it is whole, while it runs (report::RunEventWriter). A signal `stop` records is passed on
// to the child at once, `on_stop` is called, and the child is given kStopGrace, then SIGKILL.
// No wait is unbounded once a signal came; before one, the child runs as long as it measures.
// If `on_event` raises, the child is killed and reaped before the exception goes on.
ChildEnd run_self_streaming(const std::vector<std::string>& args, const std::string& log_path,
                            int stderr_as_fd, int events_fd, const StopSignals& stop,
                            const std::function<void(std::string_view line)>& on_event,
                            const std::function<void(int signal)>& on_stop);

// In a probe's child: asks the kernel to send this process SIGTERM when the run that started it
// dies (SIGKILL, a crash), so a child is never left measuring for nobody; it then writes its own
// report and exits as on any stop signal (SIGPIPE is ignored, so a write to the dead parent's
// pipe cannot end it first). `events_fd` is the pipe to the parent: when its read end is
// already closed, the parent died before the request took effect, and SIGTERM is raised now.
void stop_with_parent(int events_fd);

}  // namespace moe::cli
