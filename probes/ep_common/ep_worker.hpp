#pragma once
// What every expert-parallel probe shares. A probe's run function calls run_ep_probe: without a
// launcher's rank variables in the environment this process is the launcher (one worker per
// GPU of --devices, rank 0's cases brought back into this report); with them it is a worker,
// which joins the rendezvous, builds its NCCL communicator from rank 0's unique id and runs the
// probe's body. Workers send their per-rank results to rank 0, which alone adds the cases
// (per-rank values and min / mean / max over ranks).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ep/launch_env.hpp"
#include "engine/ep/nccl/communicator.hpp"
#include "engine/ep/rendezvous.hpp"
#include "probes/ep_common/worker_deadline.hpp"
#include "probes/probe.hpp"

namespace moe::ep {

class EpWorker {
 public:
  EpWorker(ProbeState& state, const LaunchEnv& env);

  ProbeState& state() { return state_; }
  const LaunchEnv& env() const { return env_; }
  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  Rendezvous& rendezvous() { return rendezvous_; }
  Communicator& comm() { return *comm_; }
  // Another communicator over the same ranks (a new unique id through the rendezvous), for a
  // case that follows one which aborted the first. Collective: every rank calls it.
  std::unique_ptr<Communicator> new_communicator();
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Every rank's `mine`, in rank order, on every rank (through the rendezvous); `timeout` 0:
  // --timeout.
  std::vector<nlohmann::json> gather(const nlohmann::json& mine,
                                     std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

 private:
  ProbeState& state_;
  LaunchEnv env_;
  std::chrono::milliseconds timeout_;
  Rendezvous rendezvous_;
  std::unique_ptr<Communicator> comm_;
};

// Per-rank values of each named number in `per_rank` (evidence.per_rank) and, as metrics,
// NAME_min, NAME_mean and NAME_max over ranks in `unit`.
void add_rank_summary(report::CaseResult& c, const std::vector<nlohmann::json>& per_rank,
                      const std::vector<std::pair<std::string, std::string>>& names_units);

// What a probe's workers will do over `ranks` ranks, for the launcher's deadline.
using PlanWork = WorkerPlan (*)(const ProbeState& state, int ranks);

// The launcher or the worker, as described above. `body` runs on every worker rank. The
// launcher kills workers still running at the deadline derived from `plan`
// (worker_deadline) and then FAILs check workers_finished_within_deadline (case "workers").
void run_ep_probe(ProbeState& state, void (*body)(EpWorker&), PlanWork plan);

}  // namespace moe::ep
