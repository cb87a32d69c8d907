#pragma once
#include <span>
#include <string>
#include <string_view>

namespace moe {

// Named mutations, each restoring one historic bug (docs/bugs.md). Off by default.
// They exist so each probe can prove it catches its bug; `moebench selftest` turns them on one
// at a time. Each is read at exactly the place its bug lived.
enum class Mutation {
  static_resident_cache,       // ResidentSlot kept in a process-wide map keyed by weights address
  scratch_free_without_drain,  // ScratchPool frees/regrows without draining first
  drop_without_drain,          // MoeLayer/Engine destructors free without draining first
  noop_timing_barrier,         // the timing loop's barrier is the deferred no-op synchronize
  blocking_forward,            // forward drains the stream before returning
  capture_growth,              // ScratchPool grows even while a graph is being captured
  illegal_address,             // probe copy reads through a wild pointer (a sticky CUDA error)
  sync_inside_capture,         // the engine's step drains its stream while being captured
  hot_cache_timing,            // the timing loop replays one layer's weights with no L2 flush
  blocking_one_layer,          // forward blocks the host until the first half of its layers ran
  telemetry_reset_per_replay,  // forward zeroes the telemetry record itself (captured: every replay)
  telemetry_count_wraps,       // telemetry counts wrap at 2^32 with no overflow flag
  telemetry_reset_in_capture,  // the telemetry reset's refusal during capture removed
  residency_under_live_graph,  // a residency transition is applied while a graph holds the tables
  residency_no_rollback,       // a fault in a residency transition leaves it half applied
  ep_skip_map_handshake,       // a sharded layer is built without the ranks agreeing on the map
  ep_no_watchdog,              // expert-parallel waits block in cudaStreamSynchronize, no abort
  ep_reuse_counts,             // the receive side uses the previous step's row counts
  ep_free_recv_early,          // a dropped sharded layer frees its receive buffers at once
  replay_skips_work,           // a replay is skipped when its input address and M are the last one's
  raw_sync_inside_capture,     // the engine's step calls cudaStreamSynchronize itself while captured
  graphs_kept_after_regrow,    // captured graphs kept after a layer's scratch regrew (freed block)
  device_keyed_cache,          // resident tables cached process-wide by the router's device address
  one_readback_in_forward,     // layer 0's forward reads one word back to the host and waits
  residency_stale_column,      // a residency rebuild keeps one moved expert's old down pointer
  l2_flush_half,               // the timing loop's L2 flush reads half the L2, not twice it
  l2_flush_other_stream,       // the timing loop's L2 flush runs on a stream of its own, unordered
};

struct MutationInfo {
  Mutation id;
  std::string_view name;         // CLI name, kebab-case
  std::string_view description;  // one line
  std::string_view probe;        // the probe that must catch it (or that it is planted in)
  // True for the historic bugs selftest proves the probes catch; false for faults planted to
  // test the harness itself (illegal-address: a probe that kills its CUDA context).
  bool historic_bug = true;
};

std::span<const MutationInfo> all_mutations();
const MutationInfo& info(Mutation m);
// Raises UsageError naming the valid mutations when `name` is unknown.
Mutation mutation_from_name(std::string_view name);

// Whether a mutation is active in this process now.
bool mutation_active(Mutation m);

// Activates a mutation for a scope (a probe run), restoring the previous state after.
class ScopedMutation {
 public:
  explicit ScopedMutation(Mutation m);
  ~ScopedMutation();
  ScopedMutation(const ScopedMutation&) = delete;
  ScopedMutation& operator=(const ScopedMutation&) = delete;

 private:
  Mutation m_;
  bool previous_;
};

}  // namespace moe
