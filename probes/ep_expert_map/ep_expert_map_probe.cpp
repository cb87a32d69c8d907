// Probe ep-expert-map: the last rank holds the expert map with its blocks in reverse rank order
// while the others hold the contiguous map. Built with the handshake, the sharded layer must be
// refused on every rank, naming the rank that disagrees; without it (mutation
// ep-skip-map-handshake) ranks compute other experts' rows and return wrong tokens, or trip
// over impossible expert indices, and check disagreement_refused fails.
#if MOEBENCH_HAVE_NCCL
#include "engine/ep/expert_map.hpp"
#include "engine/ep/map_handshake.hpp"
#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rank_output_check.hpp"
#include "engine/fault_injection.hpp"
#include "engine/stream.hpp"
#include "probes/ep_common/ep_worker.hpp"
#include "probes/ep_common/planned_work.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

// One layer (refused, or built with one checked step under the mutation).
ep::WorkerPlan ep_expert_map_plan(const ProbeState& state, int ranks) {
  const kernels::MoeDims dims = shapes_or_default(state, {"deepseek-v2-lite"}).front().dims(kernels::WeightFormat::bf16);
  return {{ep::sharded_layer_case(dims, ms_or_default(state, {8}).front(), ranks, 1, 1)}};
}

void ep_expert_map_body(ep::EpWorker& w) {
  ProbeState& state = w.state();
  const Shape shape = shapes_or_default(state, {"deepseek-v2-lite"}).front();
  const kernels::MoeDims dims = shape.dims(kernels::WeightFormat::bf16);
  const int m = ms_or_default(state, {8}).front();
  const int odd = w.world() - 1;
  std::vector<int> owners = ep::ExpertMap::contiguous(dims.experts, w.world()).owners();
  if (w.rank() == odd)
    for (int& o : owners) o = w.world() - 1 - o;
  const ep::ExpertMap map = ep::ExpertMap::from_owners(owners, w.world());
  nlohmann::json mine{{"rank", w.rank()}, {"fingerprint", std::to_string(map.fingerprint())},
                      {"refused", false}, {"built", false}};
  Stream stream(Stream::SyncPolicy::eager);
  try {
    ep::ShardedLayerConfig cfg;
    cfg.dims = dims;
    cfg.seed = derive_seed(state.options().seed, 0xE3);
    cfg.m = m;
    cfg.options = state.options().engine.forward();  // the engine switches, ep-compute among them
    cfg.exchange = ep::default_exchange_kind();
    cfg.skip_map_handshake = mutation_active(Mutation::ep_skip_map_handshake);
    ep::ShardedLayer layer(cfg, map, w.comm(), w.rendezvous(), state.allocator(), stream.handle());
    mine["built"] = true;
    layer.generate_input(w.rank() * m);
    layer.enqueue_step(false);
    layer.finish("a step with the maps it was built with");
    const ep::RankOutputCheck check = ep::check_rank_output(dims, cfg.seed, layer.input_host(),
                                                            layer.output_host(), m, affordable_tokens(dims, m));
    mine["output_matches"] = check.passed;
    mine["check"] = check.detail;
  } catch (const ep::MapDisagreement& e) {
    mine["refused"] = true;
    mine["error"] = e.what();
  } catch (const std::exception& e) {
    mine["error"] = e.what();
  }
  const std::vector<nlohmann::json> ranks = w.gather(mine);
  if (w.rank() != 0) return;
  report::CaseResult c = moe_case(state, "disagreeing-map", shape, kernels::WeightFormat::bf16, m);
  bool refused = true, differ = false, named = true;
  std::string detail;
  for (const auto& r : ranks) {
    refused = refused && r["refused"].get<bool>();
    differ = differ || r["fingerprint"] != ranks[0]["fingerprint"];
    const std::string err = r.value("error", "");
    named = named && err.find("rank " + std::to_string(odd) + " has") != std::string::npos;
    detail += (detail.empty() ? "" : "; ") + ("rank " + std::to_string(r["rank"].get<int>()) + ": " +
                                              (r["refused"].get<bool>() ? "refused" : r["built"].get<bool>() ? "built" : "error") +
                                              (err.empty() ? "" : " (" + err + ")"));
  }
  c.prove("maps_differ", differ, "the ranks' maps did not differ: nothing to refuse");
  c.prove("every_rank_answered", static_cast<int>(ranks.size()) == w.world(), "a rank did not answer");
  c.checks.push_back({"disagreement_refused", refused && named, detail});
  c.evidence["per_rank"] = ranks;
  c.parameters["ranks"] = w.world();
  c.conclude("every rank refused to build the layer, naming rank " + std::to_string(odd));
  state.add_case(std::move(c));
}

}  // namespace

void run_ep_expert_map_probe(ProbeState& state) { ep::run_ep_probe(state, &ep_expert_map_body, &ep_expert_map_plan); }

}  // namespace moe
#else
#include "probes/ep_common/ep_not_built.hpp"
#include "probes/probe.hpp"

namespace moe {
void run_ep_expert_map_probe(ProbeState&) { ep::ep_not_built("ep-expert-map"); }
}  // namespace moe
#endif
