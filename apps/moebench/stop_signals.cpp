#include "apps/moebench/stop_signals.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/errors.hpp"

namespace moe::cli {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
static_assert(exit_code_for_signal(SIGHUP) == to_int(ExitCode::hangup));
static_assert(exit_code_for_signal(SIGINT) == to_int(ExitCode::interrupted));
static_assert(exit_code_for_signal(SIGTERM) == to_int(ExitCode::terminated));

// Shared with the handler, which may only touch lock-free atomics and write(2).
std::atomic<int> g_received{0};
std::atomic<int> g_wake_write{-1};
std::atomic<bool> g_installed{false};

extern "C" void on_stop_signal(int signal) {
  const int saved_errno = errno;
  int none = 0;
  g_received.compare_exchange_strong(none, signal);
  const int fd = g_wake_write.load();
  if (fd >= 0) {
    const char byte = 1;
    (void)!::write(fd, &byte, 1);  // non-blocking: a full pipe already wakes the reader
  }
  errno = saved_errno;
}

}  // namespace

StopSignals::StopSignals() {
  if (g_installed.exchange(true))
    throw Error(ExitCode::probe_error, "internal: two StopSignals at once");
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_installed = false;
    throw Error(ExitCode::probe_error, std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  g_received = 0;
  g_wake_write = wake_[1];
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // Restarted: the measuring code's reads, writes and waits never see EINTR; the runner's own
  // waits poll the self-pipe instead.
  action.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
    sigaction(kStopSignals[i], &action, &previous_[i]);
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
    sigaction(kStopSignals[i], &previous_[i], nullptr);
  g_wake_write = -1;
  ::close(wake_[0]);
  ::close(wake_[1]);
  g_installed = false;
}

int StopSignals::received() const { return g_received.load(); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    default: return "signal " + std::to_string(signal);
  }
}

}  // namespace moe::cli
