#pragma once
// The single-host launcher of the expert-parallel probes: one moebench worker process per GPU,
// each told its rank by the RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT
// convention (the one a user's torchrun-style launcher, mpirun or srun gives across hosts),
// NCCL_NVLS_ENABLE=0 (NVLink multicast stays off: engine/ep/nvls_setting.hpp). Every
// worker's wait is bounded by its own watchdog; the launcher's deadline is the last resort,
// and a worker still running at it is killed.
#include <chrono>
#include <string>
#include <vector>

namespace moe::ep {

struct WorkerExit {
  int rank = 0;
  int device = 0;
  int exit_code = 0;        // 128 + signal when killed
  bool killed_at_deadline = false;
  std::string report_path;  // the worker's own report (rank 0's holds every rank's results)
  std::string log_tail;     // last lines of its stdout + stderr
};

// Starts `moebench <worker_args>` with the probe name after "run", `--device devices[r]` and
// `-o <dir>/rank<r>.json`, for every rank, and waits for all of them until `deadline`.
std::vector<WorkerExit> launch_workers(const std::vector<std::string>& worker_args,
                                       const std::string& probe, const std::vector<int>& devices,
                                       const std::string& dir, std::chrono::milliseconds deadline);

// A TCP port free on this host now (the rendezvous port of a single-host run).
int free_local_port();

}  // namespace moe::ep
