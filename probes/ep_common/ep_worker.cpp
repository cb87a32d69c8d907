#if MOEBENCH_HAVE_NCCL
#include "probes/ep_common/ep_worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/cuda_check.hpp"
#include "engine/ep/device_list.hpp"
#include "engine/fault_injection.hpp"
#include "engine/ep/nccl/nccl_library.hpp"
#include "probes/ep_common/worker_launch.hpp"
#include "reports/rank_environment.hpp"
#include "reports/report.hpp"

namespace moe::ep {

namespace {

std::chrono::milliseconds timeout_of(const ProbeState& state) {
  return std::chrono::milliseconds(
      static_cast<long long>(state.options().measure.stopping.timeout_s * 1000.0));
}

Rendezvous join_checked(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  nccl();  // no libnccl.so.2: exit 3 before anyone waits on this rank
  return Rendezvous::join(env, timeout);
}

// This process as the launcher: workers on the GPUs, then rank 0's cases into this report.
void launch(ProbeState& state, PlanWork plan_work) {
  nccl();  // one line, exit 3, before any worker starts
  const int visible = Device::count();
  const std::vector<int> devices = resolve_devices(state.options().devices, visible);
  if (state.options().worker_args.empty())
    throw Error(ExitCode::probe_error, "expert-parallel probe: no worker arguments (run it through `moebench run`)");
  const std::string probe = state.new_case("x").probe;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-ep-" + std::to_string(getpid()) + "-" + probe);
  std::filesystem::create_directories(dir);
  // Each worker bounds its own waits by --timeout; this deadline only catches a worker whose
  // watchdog failed (the mutation that removes it), so it allows for all the planned work.
  const WorkerPlan plan = plan_work(state, static_cast<int>(devices.size()));
  const std::chrono::milliseconds deadline = worker_deadline(plan, timeout_of(state));
  const std::vector<WorkerExit> exits =
      launch_workers(state.options().worker_args, probe, devices, dir.string(), deadline);
  bool have_rank0 = false;
  if (std::filesystem::exists(exits[0].report_path)) {
    try {
      const report::Report r = report::load_report(exits[0].report_path);
      for (report::CaseResult c : r.cases) {
        c.name = state.new_case(c.name).name;  // this repetition's label (--repeat)
        state.add_case(std::move(c));
      }
      have_rank0 = !r.cases.empty();
      if (r.environment.is_object() && r.environment.contains("ranks"))
        state.add_environment("ranks", r.environment["ranks"]);
    } catch (const std::exception&) {
    }
  }
  nlohmann::json per_rank = nlohmann::json::array();
  std::string killed, failed;
  for (const WorkerExit& w : exits) {
    per_rank.push_back({{"rank", w.rank}, {"device", w.device}, {"exit_code", w.exit_code},
                        {"killed_at_deadline", w.killed_at_deadline}, {"log_tail", w.log_tail}});
    const std::string who = "rank " + std::to_string(w.rank) + " (GPU " + std::to_string(w.device) + ")";
    if (w.killed_at_deadline) killed += (killed.empty() ? "" : ", ") + who;
    else if (w.exit_code != 0 && w.exit_code != 1)
      failed += (failed.empty() ? "" : "; ") + (who + " exit " + std::to_string(w.exit_code) + ": " + w.log_tail);
  }
  if (!killed.empty()) {
    // A hang that no watchdog ended: only this deadline did. A FAIL of the probe, not an error.
    report::CaseResult c = state.new_case("workers");
    c.checks.push_back({"workers_finished_within_deadline", false,
                        killed + " still running at the launcher's deadline of " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline).count()) +
                            " s (derived from " + describe(plan, timeout_of(state)) +
                            "), killed: a wait without a watchdog hung"});
    c.evidence["per_rank"] = per_rank;
    c.conclude("");
    state.add_case(std::move(c));
  } else if (!failed.empty() || !have_rank0) {
    report::CaseResult c = state.new_case("workers");
    c.verdict = report::Verdict::error;
    c.reason = failed.empty() ? "rank 0 wrote no cases" : failed;
    c.evidence["per_rank"] = per_rank;
    state.add_case(std::move(c));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace

EpWorker::EpWorker(ProbeState& state, const LaunchEnv& env)
    : state_(state), env_(env), timeout_(timeout_of(state)),
      rendezvous_(join_checked(env, timeout_)) {
  comm_ = new_communicator();
}

std::unique_ptr<Communicator> EpWorker::new_communicator() {
  ncclUniqueId id{};
  if (env_.rank == 0) MOE_NCCL_CHECK(nccl().GetUniqueId(&id));
  const std::string blob =
      rendezvous_.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof id));
  if (blob.size() != sizeof id)
    throw Error(ExitCode::probe_error, "rendezvous: rank 0 sent a unique id of " +
                                           std::to_string(blob.size()) + " bytes");
  std::copy(blob.begin(), blob.end(), reinterpret_cast<char*>(&id));
  MOE_CUDA_CHECK(cudaSetDevice(state_.device().index));
  return std::make_unique<Communicator>(env_.rank, env_.world, id, timeout_,
                                        !mutation_active(Mutation::ep_no_watchdog));
}

std::vector<nlohmann::json> EpWorker::gather(const nlohmann::json& mine,
                                             std::chrono::milliseconds timeout) {
  std::vector<nlohmann::json> out;
  for (const std::string& s : rendezvous_.all_gather(mine.dump(), timeout)) out.push_back(nlohmann::json::parse(s));
  return out;
}

void add_rank_summary(report::CaseResult& c, const std::vector<nlohmann::json>& per_rank,
                      const std::vector<std::pair<std::string, std::string>>& names_units) {
  c.evidence["per_rank"] = per_rank;
  for (const auto& [name, unit] : names_units) {
    std::vector<double> v;
    for (const nlohmann::json& r : per_rank)
      if (r.contains(name) && r[name].is_number()) v.push_back(r[name].get<double>());
    if (v.empty()) continue;
    double sum = 0;
    for (double x : v) sum += x;
    c.metrics[name + "_min"] = {*std::min_element(v.begin(), v.end()), unit};
    c.metrics[name + "_mean"] = {sum / static_cast<double>(v.size()), unit};
    c.metrics[name + "_max"] = {*std::max_element(v.begin(), v.end()), unit};
  }
}

void run_ep_probe(ProbeState& state, void (*body)(EpWorker&), PlanWork plan) {
  const std::optional<LaunchEnv> env = launch_env();
  if (!env) {
    launch(state, plan);
    return;
  }
  EpWorker worker(state, *env);
  // Every rank's GPU and the topology between them, into rank 0's environment block.
  const std::vector<nlohmann::json> ranks =
      worker.gather(report::capture_rank_environment(worker.rank(), state.device().index));
  if (worker.rank() == 0) state.add_environment("ranks", report::merge_rank_environments(ranks));
  body(worker);
}

}  // namespace moe::ep
#endif
