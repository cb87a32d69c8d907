// The list of probes. A new probe is one file under probes/ (its run function and its sweep)
// and one entry here.
#include <array>

#include "common/errors.hpp"
#include "moebench/engine_abi.h"
#include "probes/probe.hpp"

namespace moe {

void run_route_telemetry_probe(ProbeState&);
void run_expert_residency_probe(ProbeState&);
void run_copy_probe(ProbeState&);
void run_bandwidth_probe(ProbeState&);
void run_capture_replay_probe(ProbeState&);
void run_two_engine_probe(ProbeState&);
void run_drop_after_inflight_probe(ProbeState&);
void run_scratch_regrow_probe(ProbeState&);
void run_host_nonblocking_probe(ProbeState&);
void run_barrier_probe(ProbeState&);
void run_stages_probe(ProbeState&);
void run_stream_probe(ProbeState&);
void run_ep_ceiling_probe(ProbeState&);
void run_ep_step_probe(ProbeState&);
void run_ep_expert_map_probe(ProbeState&);
void run_ep_hang_probe(ProbeState&);
void run_ep_stale_counts_probe(ProbeState&);
void run_ep_drop_inflight_probe(ProbeState&);
void run_test_ticks_probe(ProbeState&);

// Each declared in its probe's file, beside the code that iterates it.
extern const SweepDeclaration copy_sweep;
extern const SweepDeclaration bandwidth_sweep;
extern const SweepDeclaration capture_replay_sweep;
extern const SweepDeclaration route_telemetry_sweep;
extern const SweepDeclaration expert_residency_sweep;
extern const SweepDeclaration two_engine_sweep;
extern const SweepDeclaration drop_after_inflight_sweep;
extern const SweepDeclaration scratch_regrow_sweep;
extern const SweepDeclaration host_nonblocking_sweep;
extern const SweepDeclaration barrier_sweep;
extern const SweepDeclaration stages_sweep;
extern const SweepDeclaration stream_sweep;
extern const SweepDeclaration test_ticks_sweep;

namespace {
#if MOEBENCH_HAVE_NCCL
constexpr std::string_view kEpUnavailable{};
#else
constexpr std::string_view kEpUnavailable{MOEBENCH_NCCL_MISSING_REASON};
#endif
// Why a probe cannot take an external engine (--engine).
constexpr ExternalEngineUse kMeasuresDevice{.why_not = "it measures the device, not an engine"};
constexpr ExternalEngineUse kMeasuresOwnKernels{.why_not = "it measures moebench's own kernels by name"};
constexpr ExternalEngineUse kMeasuresTimingLoop{.why_not = "it checks moebench's own timing loop, not an engine"};
constexpr ExternalEngineUse kTestOnly{.why_not = "it is a test of the runner and runs no engine"};
// What a probe needs of an adapter to run through it (--engine; docs/engine-abi.md).
constexpr ExternalEngineUse kThroughAdapter{.runs = true};
constexpr ExternalEngineUse kNeedsRouteCounts{.runs = true, .needs = MOEBENCH_CAP_ROUTE_COUNTS};
constexpr ExternalEngineUse kNeedsCapture{.runs = true, .needs = MOEBENCH_CAP_CAPTURE_SAFE_FORWARD};
constexpr ExternalEngineUse kNeedsRouteCountsAndCapture{
    .runs = true, .needs = MOEBENCH_CAP_ROUTE_COUNTS | MOEBENCH_CAP_CAPTURE_SAFE_FORWARD};
constexpr ExternalEngineUse kNeedsDeviceAllocator{.runs = true, .needs = MOEBENCH_CAP_DEVICE_ALLOCATOR};
constexpr ExternalEngineUse kNoExpertParallelism{
    .why_not = "expert parallelism is not part of the engine ABI"};
constexpr std::array kProbes{
    ProbeInfo{"copy",
              "device memory ceilings: read-only stream (the read ceiling), cudaMemcpy D2D and "
              "an SM copy kernel, over buffers several times the L2",
              &run_copy_probe, &copy_sweep, true, false, 1, {}, kMeasuresDevice},
    ProbeInfo{"bandwidth",
              "one decode step per shape, M, format and mode: GPU, host and kernel time, "
              "bytes (dedup and not), GB/s and percent of the read ceiling",
              &run_bandwidth_probe, &bandwidth_sweep, true, false, 1, {}, kNeedsRouteCounts},
    ProbeInfo{"capture-replay",
              "graph capture and replay: capture refusals, no sync in capture, replays on new "
              "tokens over poisoned outputs, repeated cycles, a replay after its scratch regrew, "
              "eager after replay, teardown; host time saved",
              &run_capture_replay_probe, &capture_replay_sweep, true, false, 1, {}, kNeedsCapture},
    ProbeInfo{"route-telemetry",
              "the route kernel's record of routed experts: one window over eager calls and "
              "replays equals the oracle, reset refused in capture, overflow and poison fail "
              "closed, two engines apart; overhead of arming against 2 us and 2%",
              &run_route_telemetry_probe, &route_telemetry_sweep, true, true, 1, {}, kNeedsRouteCountsAndCapture},
    ProbeInfo{"expert-residency",
              "hot experts on the device, cold ones in host memory from a telemetry window: "
              "same bits as all-resident, refused in capture and under a live graph, a fault "
              "rolls back; step time resident, planned and all cold",
              &run_expert_residency_probe, &expert_residency_sweep, true, true},
    ProbeInfo{"two-engine",
              "N engines built, run and destroyed in sequence, weights at the same addresses, "
              "freed experts poisoned, then freed device blocks handed out again: a stale "
              "resident table reads poison or other experts (docs/bugs.md, bug 1)",
              &run_two_engine_probe, &two_engine_sweep, true, false, 1, {}, kThroughAdapter},
    ProbeInfo{"drop-after-inflight",
              "a layer and an engine destroyed with a forward in flight, the next request "
              "writing the freed memory: the pending result must stay right",
              &run_drop_after_inflight_probe, &drop_after_inflight_sweep, true, false, 1, {}, kNeedsDeviceAllocator},
    ProbeInfo{"scratch-regrow",
              "one layer over growing and shrinking M, no drain between calls, each regrow under "
              "a pending call while another request writes the freed block; every token checked",
              &run_scratch_regrow_probe, &scratch_regrow_sweep, true},
    ProbeInfo{"host-nonblocking",
              "forward returns to the host before 0.3 of the GPU time of a two-layer >500 us step",
              &run_host_nonblocking_probe, &host_nonblocking_sweep, true},
    ProbeInfo{"barrier",
              "moebench's timing loop against one with a no-op barrier: the queue-saturation "
              "artifact (host time converging on GPU time) shown and ruled out",
              &run_barrier_probe, &barrier_sweep, true, false, 1, {}, kMeasuresTimingLoop},
    ProbeInfo{"stages",
              "where a layer's time goes: route, gate_up, down and combine per shape, M, format "
              "and mode from CUPTI kernel records, each with its own time, its share of the "
              "critical path and its floor",
              &run_stages_probe, &stages_sweep, false, false, 1, {}, kMeasuresOwnKernels},
    ProbeInfo{"stream",
              "the streaming expert GEMM's pipeline alone and with its bf16 and int4 math: one "
              "block an SM, bulk copies into a shared-memory ring, over 5 to 200 MB; percent of "
              "the read ceiling (sm_90+)",
              &run_stream_probe, &stream_sweep, false, false, 1, {}, kMeasuresOwnKernels},
    // Expert parallelism: one worker per GPU of --devices (engine/ep/). Built without NCCL
    // they are listed as not built, and running one says why (exit 3).
    ProbeInfo{"ep-ceiling",
              "the link's ceilings over the GPUs of --devices: ncclAlltoAll bus bandwidth over "
              "a large buffer and each pair of ranks both ways",
              &run_ep_ceiling_probe, nullptr, false, false, 2, kEpUnavailable, kNoExpertParallelism},
    ProbeInfo{"ep-step",
              "one expert-parallel step per shape, tokens per rank, exchange (--exchange; lsa only "
              "when named) and mode (eager, captured graph): dispatch, expert compute and combine "
              "GPU time per rank, host time, bytes on the wire, GB/s against the alltoall ceiling, "
              "after every rank's output matched the reference",
              &run_ep_step_probe, nullptr, false, false, 2, kEpUnavailable, kNoExpertParallelism},
    ProbeInfo{"ep-expert-map",
              "one rank holds another expert map: building the sharded layer must be refused on "
              "every rank with the ranks named, never a hang or wrong tokens",
              &run_ep_expert_map_probe, nullptr, false, false, 2, kEpUnavailable, kNoExpertParallelism},
    ProbeInfo{"ep-hang",
              "one rank stays silent in an exchange, then one dies after its first exchange: "
              "the others' watchdog aborts their communicators within --timeout and names the rank",
              &run_ep_hang_probe, nullptr, false, false, 2, kEpUnavailable, kNoExpertParallelism},
    ProbeInfo{"ep-stale-counts",
              "tokens per rank change from step to step on one sharded layer: every step's output "
              "must match the reference, so the receive side used this step's counts",
              &run_ep_stale_counts_probe, nullptr, false, false, 2, kEpUnavailable, kNoExpertParallelism},
    ProbeInfo{"ep-drop-inflight",
              "each rank drops its sharded layer with a step's exchange in flight and the next "
              "owner writes memory of the receive buffers' sizes: no receive block may be handed "
              "out before the step finished, and the dropped step's output must stay right",
              &run_ep_drop_inflight_probe, nullptr, false, false, 2, kEpUnavailable, kNoExpertParallelism},
};

constexpr std::array kTestProbes{
    ProbeInfo{"test-ticks",
              "test-only: a case every 20 ms on the host, no GPU, nothing measured; for the "
              "runner's tests (interrupting a real run)",
              &run_test_ticks_probe, &test_ticks_sweep, false, false, 1, {}, kTestOnly, false},
};
}  // namespace

std::span<const ProbeInfo> all_probes() { return kProbes; }
std::span<const ProbeInfo> test_probes() { return kTestProbes; }

const ProbeInfo& probe_by_name(std::string_view name) {
  std::string valid;
  for (const ProbeInfo& p : kProbes) {
    if (p.name == name) return p;
    valid += (valid.empty() ? "" : ", ") + std::string(p.name);
  }
  for (const ProbeInfo& p : kTestProbes)
    if (p.name == name) return p;
  throw UsageError("unknown probe '" + std::string(name) + "'; valid probes: " + valid);
}

}  // namespace moe
