#pragma once
#include <string>
#include <vector>

namespace moe::cli {

// Runs this same moebench binary with `args` in a child process, its stdout and stderr going to
// `log_path`, and waits. Returns the exit code, or 128 + signal when the child was killed.
// Used where one run's fault (a sticky CUDA error, a crash) must not take the caller down.
int run_self(const std::vector<std::string>& args, const std::string& log_path);

}  // namespace moe::cli
