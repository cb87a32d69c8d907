#pragma once
#include <string>
#include <vector>

namespace moe::cli {

// Runs this same moebench binary with `args` in a child process, its stdout and stderr going to
// `log_path`, and waits. Returns the exit code, or 128 + signal when the child was killed.
// Used where one run's fault (a sticky CUDA error, a crash) must not take the caller down.
// `stderr_as_fd` >= 0: the child also holds this process's stderr as that descriptor, for lines
// the user must see while it runs (the run's progress).
int run_self(const std::vector<std::string>& args, const std::string& log_path,
             int stderr_as_fd = -1);

}  // namespace moe::cli
