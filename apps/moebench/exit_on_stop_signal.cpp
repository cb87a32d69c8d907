#include "apps/moebench/exit_on_stop_signal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/errors.hpp"

namespace moe::cli {

ExitOnStopSignal::ExitOnStopSignal(const StopSignals& signals, LiveReport& report) {
  if (::pipe2(quit_, O_CLOEXEC) != 0)
    throw Error(ExitCode::probe_error, std::string("cannot create a pipe: ") + std::strerror(errno));
  thread_ = std::thread([this, &signals, &report] { wait_and_exit(signals, report); });
}

ExitOnStopSignal::~ExitOnStopSignal() {
  const char byte = 1;
  (void)!::write(quit_[1], &byte, 1);
  thread_.join();
  ::close(quit_[0]);
  ::close(quit_[1]);
}

void ExitOnStopSignal::wait_and_exit(const StopSignals& signals, LiveReport& report) const {
  for (;;) {
    pollfd fds[] = {{signals.wake_fd(), POLLIN, 0}, {quit_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (const int signal = signals.received()) {
      int code = exit_code_for_signal(signal);
      try {
        const std::size_t cases = report.record_interruption(signal, /*final=*/true);
        std::fprintf(stderr, "moebench: %s: stopped; the partial report (%zu cases) is in %s\n",
                     signal_name(signal).c_str(), cases, report.path().c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "moebench: %s: stopped, and the report could not be written: %s\n",
                     signal_name(signal).c_str(), e.what());
      }
      std::fflush(stderr);
      ::_exit(code);  // no unwinding: the measuring thread is mid-case and holds the device
    }
  }
}

}  // namespace moe::cli
