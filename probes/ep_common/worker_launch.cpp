#include "probes/ep_common/worker_launch.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/errors.hpp"
#include "common/log_tail.hpp"

extern char** environ;

namespace moe::ep {

namespace {

// The parent's environment without the rank variables of any convention, plus the worker's.
std::vector<std::string> worker_environment(int rank, int world, int port) {
  static const char* kDropped[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                                   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                   "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
                                   "MPI_LOCALRANKID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                                   "SLURM_STEP_NUM_TASKS", "NCCL_NVLS_ENABLE"};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool drop = false;
    for (const char* d : kDropped) drop = drop || key == d;
    if (!drop) env.push_back(kv);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(world));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  // This process refused any other value when it loaded NCCL; each worker checks again.
  env.push_back("NCCL_NVLS_ENABLE=0");
  return env;
}

}  // namespace

int free_local_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) throw EnvironmentError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(s);
    throw EnvironmentError(std::string("cannot find a free TCP port: ") + std::strerror(errno));
  }
  ::close(s);
  return ntohs(a.sin_port);
}

std::vector<WorkerExit> launch_workers(const std::vector<std::string>& worker_args,
                                       const std::string& probe, const std::vector<int>& devices,
                                       const std::string& dir, std::chrono::milliseconds deadline) {
  char self[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw Error(ExitCode::probe_error, "cannot find the moebench binary (/proc/self/exe)");
  const int world = static_cast<int>(devices.size());
  const int port = free_local_port();
  std::vector<WorkerExit> exits(world);
  std::vector<pid_t> pids(world, -1);
  for (int r = 0; r < world; ++r) {
    WorkerExit& w = exits[r];
    w.rank = r;
    w.device = devices[r];
    w.report_path = dir + "/rank" + std::to_string(r) + ".json";
    const std::string log = dir + "/rank" + std::to_string(r) + ".log";
    std::vector<std::string> args{self};
    for (std::size_t i = 0; i < worker_args.size(); ++i) {
      args.push_back(worker_args[i]);
      if (i == 0) args.push_back(probe);  // after "run"
    }
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "-o") args[i + 1] = w.report_path;
    bool device_named = false;
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--device") {
        args[i + 1] = std::to_string(w.device);
        device_named = true;
      }
    // Always named: a worker without --device would pick its GPU from LOCAL_RANK, which is
    // its rank here, not the rank's entry of --devices.
    if (!device_named) args.insert(args.end(), {"--device", std::to_string(w.device)});
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = worker_environment(r, world, port);
    std::vector<char*> envp;
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pids[r], self, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      for (int k = 0; k < r; ++k) ::kill(pids[k], SIGKILL);
      for (int k = 0; k < r; ++k) ::waitpid(pids[k], nullptr, 0);
      throw Error(ExitCode::probe_error, std::string("cannot start an expert-parallel worker: ") + std::strerror(rc));
    }
  }
  const auto until = std::chrono::steady_clock::now() + deadline;
  int left = world;
  while (left > 0) {
    for (int r = 0; r < world; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      const pid_t done = ::waitpid(pids[r], &status, WNOHANG);
      if (done != pids[r]) continue;
      exits[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      pids[r] = -1;
      --left;
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() >= until) {
      for (int r = 0; r < world; ++r)
        if (pids[r] >= 0) {
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], nullptr, 0);
          exits[r].exit_code = 128 + SIGKILL;
          exits[r].killed_at_deadline = true;
          pids[r] = -1;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (WorkerExit& w : exits) w.log_tail = log_tail(dir + "/rank" + std::to_string(w.rank) + ".log", 5);
  return exits;
}

}  // namespace moe::ep
