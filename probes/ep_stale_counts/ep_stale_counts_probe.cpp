// Probe ep-stale-counts: one sharded layer, built once for the largest M, runs steps whose
// tokens per rank go up and down (8, 32, 4, 32, 1). Every step's output on every rank must
// match the reference: the receive side takes each block's row count from the block header it
// just received. Under the mutation ep-reuse-counts it uses the previous step's counts, so a
// step that sends more rows than the one before loses rows (and one that sends fewer computes
// stale ones), and check every_step_matches_reference fails.
#if MOEBENCH_HAVE_NCCL
#include "engine/ep/expert_map.hpp"
#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rank_output_check.hpp"
#include "engine/stream.hpp"
#include "probes/ep_common/ep_worker.hpp"
#include "probes/ep_common/planned_work.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

const std::vector<int> kSequence{8, 32, 4, 32, 1};

// One layer for the largest M, a checked step of each M of the sequence.
ep::WorkerPlan ep_stale_counts_plan(const ProbeState& state, int ranks) {
  const kernels::MoeDims dims = shapes_or_default(state, {"deepseek-v2-lite"}).front().dims(kernels::WeightFormat::bf16);
  const std::vector<int> sequence = state.options().user_set_ms ? state.options().ms : kSequence;
  ep::WorkerPlan plan;
  for (int m : sequence) plan.cases.push_back(ep::sharded_layer_case(dims, m, ranks, 1, 1));
  return plan;
}

void ep_stale_counts_body(ep::EpWorker& w) {
  ProbeState& state = w.state();
  const Shape shape = shapes_or_default(state, {"deepseek-v2-lite"}).front();
  const kernels::MoeDims dims = shape.dims(kernels::WeightFormat::bf16);
  const std::vector<int> sequence = state.options().user_set_ms ? state.options().ms : kSequence;
  int largest = 1;
  for (int m : sequence) largest = std::max(largest, m);
  Stream stream(Stream::SyncPolicy::eager);
  ep::ShardedLayerConfig cfg;
  cfg.dims = dims;
  cfg.seed = derive_seed(state.options().seed, 0xE5);
  cfg.m = largest;
  cfg.options = state.options().engine.forward();  // the engine switches, ep-compute among them
  cfg.exchange = ep::default_exchange_kind();
  nlohmann::json steps = nlohmann::json::array();
  bool all = true;
  {
    ep::ShardedLayer layer(cfg, ep::ExpertMap::contiguous(dims.experts, w.world()), w.comm(),
                           w.rendezvous(), state.allocator(), stream.handle());
    layer.generate_input(w.rank() * largest);
    const std::vector<float> x = layer.input_host();
    for (int m : sequence) {
      layer.enqueue_step(false, m);
      layer.finish("a step of " + std::to_string(m) + " tokens");
      const std::vector<float> out = layer.output_host();
      const std::size_t n = static_cast<std::size_t>(m) * dims.hidden;
      const ep::RankOutputCheck check = ep::check_rank_output(
          dims, cfg.seed, std::vector<float>(x.begin(), x.begin() + n),
          std::vector<float>(out.begin(), out.begin() + n), m, affordable_tokens(dims, m));
      all = all && check.passed;
      steps.push_back({{"m", m}, {"passed", check.passed}, {"check", check.detail}});
    }
  }
  const std::vector<nlohmann::json> ranks =
      w.gather({{"rank", w.rank()}, {"passed", all}, {"steps", steps}});
  if (w.rank() != 0) return;
  report::CaseResult c = moe_case(state, "m-sequence", shape, kernels::WeightFormat::bf16);
  bool ok = true;
  std::string detail;
  for (const auto& r : ranks) {
    ok = ok && r["passed"].get<bool>();
    for (const auto& s : r["steps"])
      if (!s["passed"].get<bool>())
        detail += (detail.empty() ? "" : "; ") + ("rank " + std::to_string(r["rank"].get<int>()) +
                                                  " step m=" + std::to_string(s["m"].get<int>()) + ": " +
                                                  s["check"].get<std::string>());
  }
  bool changed = false;
  for (std::size_t i = 1; i < sequence.size(); ++i) changed = changed || sequence[i] != sequence[i - 1];
  c.prove("m_changed_between_steps", changed, "the tokens per rank never changed between steps");
  c.prove("every_rank_answered", static_cast<int>(ranks.size()) == w.world(), "a rank did not answer");
  c.checks.push_back({"every_step_matches_reference", ok, ok ? "every step of every rank matched" : detail});
  c.evidence["per_rank"] = ranks;
  c.parameters["ranks"] = w.world();
  c.parameters["m_sequence"] = sequence;
  c.conclude("every step matched the reference on every rank as M changed");
  state.add_case(std::move(c));
}

}  // namespace

void run_ep_stale_counts_probe(ProbeState& state) { ep::run_ep_probe(state, &ep_stale_counts_body, &ep_stale_counts_plan); }

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_stale_counts_probe(ProbeState&) { ep::ep_not_built("ep-stale-counts"); }
}  // namespace moe
#endif
