#pragma once
// Which rank this process is, from the launcher's environment. Conventions, first match wins:
//   RANK / WORLD_SIZE / LOCAL_RANK                        torch.distributed, moebench's own workers
//   OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK            mpirun (Open MPI)
//   PMI_RANK / PMI_SIZE / MPI_LOCALRANKID                 mpirun (MPICH, Intel MPI)
//   SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID           srun (a task: SLURM_STEP_NUM_TASKS
//                                                         set; not an sbatch or salloc shell)
// The rendezvous address is MASTER_ADDR / MASTER_PORT in every case (default 127.0.0.1:29500):
// rank 0 listens there and serves the NCCL unique id.
#include <functional>
#include <optional>
#include <string>

namespace moe::ep {

struct LaunchEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;  // picks the device on a multi-GPU host
  std::string local_rank_variable;  // the variable local_rank came from; empty: none, the rank
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string convention;  // which variables were used, e.g. "RANK/WORLD_SIZE"
};

using EnvLookup = std::function<const char*(const char*)>;

// Nullopt when no convention's variables are set. Throws UsageError for a malformed value
// (not a number, rank outside the world, port outside 1..65535).
std::optional<LaunchEnv> launch_env_from(const EnvLookup& getenv);
std::optional<LaunchEnv> launch_env();  // from the process environment

// The GPU a process runs on: --device when given; else, in a worker a launcher started
// (mpirun, srun, torchrun: a convention above matched), its local rank (LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID; without one, its rank); else 0.
// `source` says which, for the report ("--device", "LOCAL_RANK", "RANK", "default").
struct DeviceChoice {
  int device = 0;
  std::string source;
};
DeviceChoice choose_device(std::optional<int> requested, const EnvLookup& getenv);

}  // namespace moe::ep
