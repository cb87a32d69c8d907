#include "apps/moebench/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <thread>

#include "common/errors.hpp"
#include "reports/run_events.hpp"

extern char** environ;

namespace moe::cli {

namespace {

using Clock = std::chrono::steady_clock;

// This binary, with `args`, its stdout and stderr going to `log_path`; `stderr_as_fd` >= 0
// (progress lines) and `pipe_as_fd` (the event pipe's write end `pipe_fd`) as in the callers.
pid_t spawn_self(const std::vector<std::string>& args, const std::string& log_path,
                 int stderr_as_fd, int pipe_fd = -1, int pipe_as_fd = -1) {
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
  // The pipe's end is numbered above both targets (callers see to it), so neither dup2
  // overwrites it before it is copied.
  if (pipe_fd >= 0) posix_spawn_file_actions_adddup2(&actions, pipe_fd, pipe_as_fd);
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
  return pid;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// The child's status once it ended within `limit`; nothing when it did not.
std::optional<int> reap_within(pid_t pid, Clock::duration limit) {
  const auto until = Clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return std::nullopt;  // not ours any more
    if (Clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A started child that must not outlive the scope unreaped: on unwinding (a report that
// cannot be written, a refused event) it is killed and reaped, within kKillWait.
class RunningChild {
 public:
  explicit RunningChild(pid_t pid) : pid_(pid) {}
  ~RunningChild() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)reap_within(pid_, kKillWait);
  }
  RunningChild(const RunningChild&) = delete;
  RunningChild& operator=(const RunningChild&) = delete;
  pid_t pid() const { return pid_; }
  void ended() { pid_ = -1; }  // reaped, or given up on

 private:
  pid_t pid_;
};

// A descriptor closed at the end of the scope.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  ~OwnedFd() { reset(); }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Reads what the pipe holds now, handing each whole line on. False once the pipe is at its end
// (every writer closed it).
bool read_available(int fd, report::RunEventLines& lines,
                    const std::function<void(std::string_view)>& on_event) {
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      for (const std::string& line : lines.feed({buf, static_cast<std::size_t>(n)})) on_event(line);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

}  // namespace

int run_self(const std::vector<std::string>& args, const std::string& log_path,
             int stderr_as_fd) {
  const pid_t pid = spawn_self(args, log_path, stderr_as_fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(ExitCode::probe_error, "waitpid failed");
  return exit_code_of(status);
}

ChildEnd run_self_streaming(const std::vector<std::string>& args, const std::string& log_path,
                            int stderr_as_fd, int events_fd, const StopSignals& stop,
                            const std::function<void(std::string_view line)>& on_event,
                            const std::function<void(int signal)>& on_stop) {
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC) != 0)
    throw Error(ExitCode::probe_error, std::string("cannot create a pipe: ") + std::strerror(errno));
  const OwnedFd read_end(ends[0]);
  OwnedFd write_end(::fcntl(ends[1], F_DUPFD_CLOEXEC, std::max(events_fd, stderr_as_fd) + 1));
  ::close(ends[1]);
  if (write_end.get() < 0)
    throw Error(ExitCode::probe_error, std::string("cannot place a pipe: ") + std::strerror(errno));
  ::fcntl(read_end.get(), F_SETFL, ::fcntl(read_end.get(), F_GETFL) | O_NONBLOCK);

  RunningChild child(spawn_self(args, log_path, stderr_as_fd, write_end.get(), events_fd));
  write_end.reset();  // the child's copy is the only one: its end is the pipe's end
  report::RunEventLines lines;
  ChildEnd end;
  bool pipe_open = true;
  Clock::time_point deadline{};
  for (;;) {
    if (const int signal = stop.received(); signal && !end.forwarded) {
      end.forwarded = signal;
      ::kill(child.pid(), signal);
      deadline = Clock::now() + kStopGrace;
      if (on_stop) on_stop(signal);
    }
    if (end.forwarded && Clock::now() >= deadline) {
      if (end.killed) {  // not even SIGKILL ended it (stuck in the driver): left to init
        end.reaped = false;
        end.exit_code = 128 + SIGKILL;
        child.ended();
        break;
      }
      ::kill(child.pid(), SIGKILL);
      end.killed = true;
      deadline = Clock::now() + kKillWait;
    }
    // Woken by a line, a stop signal (until one was passed on) or the tick that looks at the
    // child's state; the child's own children may hold the pipe open after it ended.
    pollfd fds[2];
    nfds_t n = 0;
    if (pipe_open) fds[n++] = {read_end.get(), POLLIN, 0};
    if (!end.forwarded) fds[n++] = {stop.wake_fd(), POLLIN, 0};
    (void)::poll(fds, n, 200);
    if (pipe_open) pipe_open = read_available(read_end.get(), lines, on_event);
    int status = 0;
    if (::waitpid(child.pid(), &status, WNOHANG) == child.pid()) {
      child.ended();
      if (pipe_open) (void)read_available(read_end.get(), lines, on_event);
      end.exit_code = exit_code_of(status);
      break;
    }
  }
  return end;
}

void stop_with_parent(int events_fd) {
  // A case finished as the parent dies must not end this process by SIGPIPE before the
  // kernel's SIGTERM has it write its report: the write fails instead (RunEventWriter).
  ::signal(SIGPIPE, SIG_IGN);
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return;  // best effort: Linux only
  pollfd p{events_fd, 0, 0};  // POLLERR on a pipe's write end: its read end is closed
  if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) ::raise(SIGTERM);
}

}  // namespace moe::cli
