#include "probes/catch_plan.hpp"

namespace moe {

std::vector<report::CatchTarget> catch_targets(const MutationInfo& m) {
  using T = report::CatchTarget;
  switch (m.id) {
    case Mutation::static_resident_cache:
      // A stale table is seen twice: read back it is not the layer's own, and its experts
      // are poison, so the outputs are wrong.
      return {T{"two-engine", "sequence",
                {"resident_tables_point_at_own_experts", "outputs_match_own_seed"}}};
    case Mutation::scratch_free_without_drain:
      // Another stream writes the freed block while the call that reads it is pending (its
      // event not ready at the write), and that call's output comes out wrong.
      return {T{"scratch-regrow", "schedule",
                {"every_call_matches_reference", "freed_block_not_written_under_pending_call"}}};
    case Mutation::drop_without_drain:
      return {T{"drop-after-inflight", "", {"inflight_output_matches_reference"}}};  // layer, engine
    case Mutation::noop_timing_barrier:
      return {T{"barrier", "loops", {"harness_barrier_waits"}}};
    case Mutation::blocking_forward:
      // Eager, the host waits; captured, the same wait is a sync inside the capture.
      return {T{"host-nonblocking", "forward",
                {"forward_returns_before_gpu_finishes", "forward_never_waits_for_its_stream"}},
              T{"capture-replay", "cycle", {"no_sync_inside_capture"}}};
    case Mutation::capture_growth:
      return {T{"capture-replay", "cycle", {"capture_growth_refused"}}};
    case Mutation::sync_inside_capture:
      return {T{"capture-replay", "cycle", {"no_sync_inside_capture"}}};
    case Mutation::hot_cache_timing:
      return {T{"bandwidth", "step", {"cold_figure_defeats_l2"}}};
    case Mutation::blocking_one_layer:
      return {T{"host-nonblocking", "forward",
                {"forward_returns_before_gpu_finishes", "forward_never_waits_for_its_stream"}}};
    case Mutation::telemetry_reset_per_replay:
      return {T{"route-telemetry", "window", {"window_matches_oracle"}}};
    case Mutation::telemetry_count_wraps:
      return {T{"route-telemetry", "window", {"overflow_saturates_sticky"}}};
    case Mutation::telemetry_reset_in_capture:
      return {T{"route-telemetry", "window", {"reset_refused_during_capture"}}};
    case Mutation::residency_under_live_graph:
      return {T{"expert-residency", "transition", {"transition_refused_under_live_graph"}}};
    case Mutation::residency_no_rollback:
      return {T{"expert-residency", "transition", {"fault_rolls_back"}}};
    case Mutation::ep_skip_map_handshake:
      return {T{"ep-expert-map", "disagreeing-map", {"disagreement_refused"}}};
    case Mutation::ep_no_watchdog:
      // The peers hang; only the launcher's deadline ends them (probes/ep_common/ep_worker.cpp).
      return {T{"ep-hang", "workers", {"workers_finished_within_deadline"}}};
    case Mutation::ep_reuse_counts:
      return {T{"ep-stale-counts", "m-sequence", {"every_step_matches_reference"}}};
    case Mutation::ep_free_recv_early:
      // The successor receives the receive blocks while the exchange is pending, and the
      // exchange writes its rows over the successor's bytes.
      return {T{"ep-drop-inflight", "layer",
                {"no_receive_block_handed_out_while_pending", "successor_bytes_intact"}}};
    case Mutation::replay_skips_work:
      // Only the steps that write new tokens into the graph's input buffer and poison the
      // outputs before each replay can tell a replay that did nothing.
      return {T{"capture-replay", "cycle", {"repeated_replays_match_reference", "capture_cycles_correct"}}};
    case Mutation::raw_sync_inside_capture:
      return {T{"capture-replay", "cycle", {"no_sync_inside_capture"}}};
    case Mutation::graphs_kept_after_regrow:
      // The stale graph writes its scratch into the freed blocks' next owner.
      return {T{"capture-replay", "cycle", {"freed_scratch_untouched_by_replay"}}};
    case Mutation::device_keyed_cache:
      // Hit only where device addresses are reused: the reuse phase.
      return {T{"two-engine", "sequence",
                {"reuse_phase_tables_point_at_own_experts", "reuse_phase_outputs_match_own_seed"}}};
    case Mutation::one_readback_in_forward:
      // It waits for nothing queued ahead in a drained timing loop, so the ratio of host to GPU
      // time stays low; only the forward behind a hold sees the wait.
      return {T{"host-nonblocking", "forward", {"forward_never_waits_for_its_stream"}}};
    case Mutation::residency_stale_column:
      // The tables read back after the plan name a freed block, which the probe poisoned: the
      // checksums of the experts through the tables change.
      return {T{"expert-residency", "transition", {"tables_match_placement", "planned_output_identical"}}};
    case Mutation::l2_flush_half:
    case Mutation::l2_flush_other_stream:
      // Every sample still follows a flush; the canary timed after it finds the L2 warm (half
      // a flush) or the flush unfinished when the sample began (another stream).
      return {T{"bandwidth", "step", {"cold_figure_defeats_l2"}}};
    default:
      return {T{std::string(m.probe), "", {}}};
  }
}

std::vector<std::string> clean_only_probes() { return {"copy", "bandwidth"}; }

}  // namespace moe
