#include "engine/ep/launch_env.hpp"

#include <array>
#include <charconv>
#include <cstdlib>

#include "common/errors.hpp"

namespace moe::ep {

namespace {

struct Convention {
  const char* rank;
  const char* world;
  const char* local_rank;
  // Set only in a process the launcher started as a task; null: the rank variables suffice.
  const char* task_marker = nullptr;
};

// An sbatch or salloc shell has SLURM_PROCID=0 and SLURM_NTASKS of the job too: only srun's
// tasks have a step's task count, so a moebench started in the shell is the launcher.
constexpr std::array kConventions{
    Convention{"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    Convention{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    Convention{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    Convention{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS"},
};

int parse_int(const char* name, const char* text, int lo, int hi) {
  const std::string s = text;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v < lo || v > hi)
    throw UsageError(std::string(name) + "='" + s + "' is not a number in " + std::to_string(lo) +
                     ".." + std::to_string(hi));
  return v;
}

}  // namespace

std::optional<LaunchEnv> launch_env_from(const EnvLookup& getenv) {
  for (const Convention& c : kConventions) {
    const char* rank = getenv(c.rank);
    const char* world = getenv(c.world);
    if (!rank || !world || (c.task_marker && !getenv(c.task_marker))) continue;
    LaunchEnv env;
    env.convention = std::string(c.rank) + "/" + c.world;
    env.world = parse_int(c.world, world, 1, 1 << 20);
    env.rank = parse_int(c.rank, rank, 0, env.world - 1);
    const char* local = getenv(c.local_rank);
    env.local_rank = local ? parse_int(c.local_rank, local, 0, 1 << 20) : env.rank;
    if (local) env.local_rank_variable = c.local_rank;
    if (const char* addr = getenv("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
    if (const char* port = getenv("MASTER_PORT"); port && *port)
      env.master_port = parse_int("MASTER_PORT", port, 1, 65535);
    return env;
  }
  return std::nullopt;
}

std::optional<LaunchEnv> launch_env() {
  return launch_env_from([](const char* name) { return std::getenv(name); });
}

DeviceChoice choose_device(std::optional<int> requested, const EnvLookup& getenv) {
  if (requested) return {*requested, "--device"};
  if (const std::optional<LaunchEnv> env = launch_env_from(getenv)) {
    if (!env->local_rank_variable.empty()) return {env->local_rank, env->local_rank_variable};
    // No local rank: one host is the only layout where the rank names a local GPU.
    return {env->rank, env->convention.substr(0, env->convention.find('/'))};
  }
  return {0, "default"};
}

}  // namespace moe::ep
