#include "probes/evidence_rules.hpp"

#include <map>

#include "probes/measure/l2_observation.hpp"

namespace moe {

const std::vector<std::string>& required_evidence(std::string_view probe) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kRequired{
      {"copy", {"buffer_defeats_l2", "samples_taken"}},
      {"bandwidth", {"outputs_checked", "l2_defeated"}},
      {"capture-replay",
       {"growth_was_needed", "replay_saw_changed_input", "capture_cycles_ran", "replay_inputs_changed",
        "outputs_poisoned_before_replays", "scratch_moved_under_graph", "freed_scratch_taken"}},
      {"two-engine",
       {"weights_address_reused", "expert_buffers_elsewhere", "freed_experts_poisoned",
        "fast_path_tables_read_back", "router_address_reused", "expert_buffers_reused",
        "reuse_phase_tables_read_back"}},
      {"drop-after-inflight", {"forward_pending_at_destroy", "next_request_received_freed_blocks"}},
      {"scratch-regrow", {"regrew", "every_regrow_under_pending_call", "every_freed_block_taken_by_other_stream"}},
      {"host-nonblocking", {"stream_held_when_forward_began", "two_layers", "gpu_time_long_enough"}},
      {"barrier", {"noop_barrier_artifact_visible", "loops_differ_only_in_barrier"}},
      {"stages", {"outputs_checked", "kernel_records", "l2_cold", "every_stage_has_kernels"}},
      {"stream", {"l2_cold"}},
      // Case window's; case overhead declares its own (outputs_checked) when it is made.
      {"route-telemetry",
       {"replays_in_window", "reset_called_while_capturing", "overflow_forced", "two_engines_armed_at_once"}},
      {"expert-residency", {"graph_live_during_transition", "experts_moved", "fault_injected"}},
      {"ep-expert-map", {"maps_differ", "every_rank_answered"}},
      {"ep-hang", {"silent_rank_joined", "peers_waited_on_it"}},
      {"ep-stale-counts", {"m_changed_between_steps", "every_rank_answered"}},
      {"ep-drop-inflight",
       {"every_rank_answered", "exchange_pending_at_drop", "exchange_pending_while_successor_wrote",
        "receive_blocks_handed_out_again"}},
  };
  static const std::vector<std::string> kNone;
  const auto it = kRequired.find(probe);
  return it == kRequired.end() ? kNone : it->second;
}

const std::vector<std::string>& required_evidence_through_adapter(std::string_view probe) {
  // two-engine: the resident tables are the adapter's, so the outputs (every token of every
  // layer against the reference) stand for them.
  static const std::map<std::string, std::vector<std::string>, std::less<>> kRequired{
      {"two-engine",
       {"weights_address_reused", "expert_buffers_elsewhere", "freed_experts_poisoned", "outputs_checked"}},
  };
  static const std::vector<std::string> kNone;
  const auto it = kRequired.find(probe);
  return it == kRequired.end() ? kNone : it->second;
}

L2Defeat l2_defeat(std::size_t flushed_samples, std::size_t samples, double working_set_over_l2,
                   const std::optional<report::L2Observed>& observed) {
  L2Defeat d;
  d.every_sample_flushed = samples > 0 && flushed_samples >= samples;
  d.flush_observed_cold = observed && measure::observed_cold(*observed);
  d.defeated = (d.every_sample_flushed && d.flush_observed_cold) || working_set_over_l2 >= kWorkingSetDefeatsL2;
  d.detail = std::to_string(flushed_samples) + " of " + std::to_string(samples) +
             " samples followed an L2 flush; " +
             (observed ? measure::describe(*observed) : std::string("the flush was not observed")) +
             "; the step's distinct weights are " + std::to_string(working_set_over_l2) +
             "x the L2 (4x defeats it without a flush)";
  return d;
}

}  // namespace moe
