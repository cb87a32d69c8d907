#include "engine/fault_injection.hpp"

#include <array>
#include <atomic>

#include "common/errors.hpp"

namespace moe {

namespace {
constexpr std::array<MutationInfo, 27> kMutations{{
    {Mutation::static_resident_cache, "static-resident-cache",
     "resident per-expert pointer tables cached process-wide by weights address", "two-engine"},
    {Mutation::scratch_free_without_drain, "scratch-free-without-drain",
     "scratch pool frees and regrows without draining in-flight kernels", "scratch-regrow"},
    {Mutation::drop_without_drain, "drop-without-drain",
     "layer and engine destructors free device memory without draining", "drop-after-inflight"},
    {Mutation::noop_timing_barrier, "noop-timing-barrier",
     "the timing loop's barrier is the deferred no-op synchronize", "barrier"},
    {Mutation::blocking_forward, "blocking-forward",
     "forward blocks the host until the GPU finishes", "host-nonblocking"},
    {Mutation::capture_growth, "capture-growth",
     "scratch pool grows during graph capture instead of refusing", "capture-replay"},
    {Mutation::illegal_address, "illegal-address",
     "harness fault: probe copy reads a wild pointer, leaving a sticky CUDA error", "copy",
     false},
    {Mutation::sync_inside_capture, "sync-inside-capture",
     "the engine's step drains its stream while a graph is being captured", "capture-replay"},
    {Mutation::hot_cache_timing, "hot-cache-timing",
     "the timing loop replays one layer's weights with the L2 flush off: it measures the cache",
     "bandwidth"},
    {Mutation::blocking_one_layer, "blocking-one-layer",
     "forward blocks the host until the first of two layers finishes", "host-nonblocking"},
    {Mutation::telemetry_reset_per_replay, "telemetry-reset-per-replay",
     "every forward resets the route telemetry record: inside a graph the window holds only the "
     "last replay", "route-telemetry"},
    {Mutation::telemetry_count_wraps, "telemetry-count-wraps",
     "route telemetry counts wrap at 2^32 without saturating or setting the overflow bit",
     "route-telemetry"},
    {Mutation::telemetry_reset_in_capture, "telemetry-reset-in-capture",
     "the route telemetry reset is accepted while a graph is being captured", "route-telemetry"},
    {Mutation::residency_under_live_graph, "residency-under-live-graph",
     "experts move between device and host while a captured graph still holds their pointers: "
     "its replays read freed memory", "expert-residency"},
    {Mutation::residency_no_rollback, "residency-no-rollback",
     "a fault in a residency transition leaves it half applied instead of rolling back",
     "expert-residency"},
    {Mutation::ep_skip_map_handshake, "ep-skip-map-handshake",
     "a sharded layer is built without the expert-map handshake: ranks that disagree on the map "
     "compute other experts' rows", "ep-expert-map"},
    {Mutation::ep_no_watchdog, "ep-no-watchdog",
     "expert-parallel waits block in cudaStreamSynchronize: a silent rank hangs its peers",
     "ep-hang"},
    {Mutation::ep_reuse_counts, "ep-reuse-counts",
     "the receive side of an expert-parallel step uses the previous step's row counts, not the "
     "counts that travel with the rows", "ep-stale-counts"},
    {Mutation::ep_free_recv_early, "ep-free-recv-early",
     "a sharded layer dropped with its exchange in flight frees its receive buffers at once: the "
     "next owner of the blocks gets the exchange's rows written over its own", "ep-drop-inflight"},
    {Mutation::replay_skips_work, "replay-skips-work",
     "a graph replay launches nothing when its input buffer and M are the last replay's: new "
     "tokens written into the same buffer are never computed", "capture-replay"},
    {Mutation::raw_sync_inside_capture, "raw-sync-inside-capture",
     "the engine's step calls cudaStreamSynchronize on its stream while a graph is being "
     "captured, past its own drain: the capture is invalidated", "capture-replay"},
    {Mutation::graphs_kept_after_regrow, "graphs-kept-after-regrow",
     "captured graphs are kept after an eager step regrew a layer's scratch: their replays "
     "read and write the freed block, now another owner's", "capture-replay"},
    {Mutation::device_keyed_cache, "device-keyed-cache",
     "resident per-expert pointer tables cached process-wide by the router's device address: "
     "a later engine given that address runs on the old engine's tables", "two-engine"},
    {Mutation::one_readback_in_forward, "one-readback-in-forward",
     "layer 0's forward reads one word of its input back to the host (a blocking device-to-host "
     "copy on its stream) before its kernels: it waits for little GPU work, but waits",
     "host-nonblocking"},
    {Mutation::residency_stale_column, "residency-stale-column",
     "a residency transition's rebuilt tables keep the old down-weights pointer of the first "
     "expert that went cold: its forward reads the freed device block", "expert-residency"},
    {Mutation::l2_flush_half, "l2-flush-half",
     "the timing loop's L2 flush reads half the L2's size: lines the sample reads survive it",
     "bandwidth"},
    {Mutation::l2_flush_other_stream, "l2-flush-other-stream",
     "the timing loop's L2 flush runs on a stream of its own that the sample does not wait for",
     "bandwidth"},
}};

// info() indexes the table by id: an entry out of enum order would describe another mutation.
constexpr bool ids_in_enum_order() {
  for (std::size_t i = 0; i < kMutations.size(); ++i)
    if (static_cast<std::size_t>(kMutations[i].id) != i) return false;
  return true;
}
static_assert(ids_in_enum_order(), "kMutations must list the mutations in the order of enum Mutation");

std::array<std::atomic<bool>, kMutations.size()> g_active{};
}  // namespace

std::span<const MutationInfo> all_mutations() { return kMutations; }

const MutationInfo& info(Mutation m) { return kMutations[static_cast<std::size_t>(m)]; }

Mutation mutation_from_name(std::string_view name) {
  std::string valid;
  for (const MutationInfo& m : kMutations) {
    if (m.name == name) return m.id;
    valid += (valid.empty() ? "" : ", ") + std::string(m.name);
  }
  throw UsageError("unknown mutation '" + std::string(name) + "'; valid: " + valid);
}

bool mutation_active(Mutation m) { return g_active[static_cast<std::size_t>(m)].load(); }

ScopedMutation::ScopedMutation(Mutation m)
    : m_(m), previous_(g_active[static_cast<std::size_t>(m)].exchange(true)) {}

ScopedMutation::~ScopedMutation() { g_active[static_cast<std::size_t>(m_)].store(previous_); }

}  // namespace moe
