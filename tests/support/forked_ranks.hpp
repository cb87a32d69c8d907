#pragma once
// The ranks of an expert-parallel run as processes of a CPU test (fork), each with its own
// rendezvous over 127.0.0.1, as the ranks of a multi-host run would be.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/launch_env.hpp"

namespace moe::test {

using namespace std::chrono_literals;

// A port nobody listens on right now (bound to 0, read back, closed).
inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

struct RankResult {
  int exit_code = -1;
  std::string text;  // what the rank wrote: its answer or its error
};

inline ep::LaunchEnv env_for(int rank, int world, int port) {
  ep::LaunchEnv e;
  e.rank = rank;
  e.world = world;
  e.master_port = port;
  return e;
}

// Runs body(rank) in one child process per rank in `ranks`, of a world of `world`; a child
// exits 0 with body's text, or with the error's exit code and message. A child still running
// after `limit` is killed (exit -9): the test then fails instead of hanging. A body says what
// it saw in its text and the parent checks it: a doctest assertion inside a child fails only
// the child's copy of the test, which exits with it, and never the parent.
inline std::vector<RankResult> run_ranks(int world, const std::vector<int>& ranks,
                                  const std::function<std::string(int)>& body,
                                  std::chrono::seconds limit = 20s) {
  struct Child { pid_t pid; int fd; };
  std::vector<Child> children;
  for (int rank : ranks) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      int code = 0;
      std::string text;
      try {
        text = body(rank);
      } catch (const Error& e) {
        code = to_int(e.code());
        text = e.what();
      } catch (const std::exception& e) {
        code = 99;
        text = e.what();
      }
      (void)!::write(fds[1], text.data(), text.size());
      ::_exit(code);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0]});
  }
  (void)world;
  std::vector<RankResult> out(children.size());
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (std::size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(children[i].pid, &status, WNOHANG);
      if (done == children[i].pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(children[i].pid, SIGKILL);
        ::waitpid(children[i].pid, &status, 0);
        out[i].exit_code = -9;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    if (out[i].exit_code != -9) out[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    char buf[4096];
    ssize_t k;
    while ((k = ::read(children[i].fd, buf, sizeof buf)) > 0) out[i].text.append(buf, k);
    ::close(children[i].fd);
  }
  return out;
}

inline std::vector<int> all_ranks(int world) {
  std::vector<int> r(world);
  for (int i = 0; i < world; ++i) r[i] = i;
  return r;
}


}  // namespace moe::test
