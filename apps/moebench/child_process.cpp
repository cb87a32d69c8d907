#include "apps/moebench/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "common/errors.hpp"

extern char** environ;

namespace moe::cli {

int run_self(const std::vector<std::string>& args, const std::string& log_path,
             int stderr_as_fd) {
  char self[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw Error(ExitCode::probe_error, "cannot find the moebench binary (/proc/self/exe)");
  std::vector<std::string> storage{self};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Before stderr goes to the log: the descriptor is this process's stderr.
  if (stderr_as_fd > STDERR_FILENO)
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, stderr_as_fd);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw Error(ExitCode::probe_error, std::string("cannot start a child moebench: ") + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(ExitCode::probe_error, "waitpid failed");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace moe::cli
