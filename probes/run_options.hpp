#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_allocator.hpp"
#include "engine/engine_options.hpp"
#include "engine/external/adapter_library.hpp"
#include "engine/fault_injection.hpp"
#include "engine/shape.hpp"
#include "kernels/moe/moe_types.hpp"
#include "probes/measure/sampler.hpp"

namespace moe {

// The vendor peer probe bandwidth times beside each case (--peer): none, or cuBLAS's grouped
// GEMM over the same experts and tokens (probes/bandwidth/cublas_peer.hpp).
enum class Peer { none, cublas };

// Everything a run was asked for, validated before any device is touched. Defaults are the
// documented CLI defaults (README "moebench run").
struct RunOptions {
  std::vector<Shape> shapes;                  // default: the probe's default shapes
  std::vector<int> ms;                        // tokens per forward; default per probe
  std::vector<kernels::WeightFormat> formats; // default: bf16 and int4
  std::vector<std::string> modes;             // eager, graph; default both
  measure::MeasureOptions measure;
  // The run's device allocator (--allocator): caching (LIFO reuse, the normal case of real
  // engines) or plain cudaMalloc/cudaFree, under which reuse is up to the driver.
  DeviceAllocator::Mode allocator = DeviceAllocator::Mode::caching;
  int device = 0;
  std::string device_source = "default";      // --device, LOCAL_RANK, ... (ep::choose_device)
  std::uint64_t seed = 1;
  EngineOptions engine;                       // switches: environment, then --switch
  std::optional<Mutation> mutation;           // fault injected for the whole run (selftest)
  int repeat = 1;                             // each probe runs this many times (selftest)
  int engines = 3;                            // probe two-engine: engines built in sequence
  int barrier_reps = 300;                     // probe barrier: enqueues in each of its loops
  int max_layers = 0;                         // cap on an engine's layers; 0 = no cap
  std::size_t copy_bytes = 0;                 // probe copy buffer size; 0 = 4 GiB capped by free memory
  // Probe route-telemetry: what it runs (all, checks, overhead). --telemetry.
  std::string telemetry = "all";
  bool histogram = false;                     // write each window's per-expert counts (--histogram)
  // Probe expert-residency's policy: an expert is hot when it received at least this share of
  // the window's routed pairs, as long as the hot experts fit the device budget (bytes of
  // routed experts a layer keeps on the device; 0: no cap).
  double hot_share = 0.01;
  std::size_t device_budget = 0;
  // --peer. Asked for by name it is required: without the library the run is an environment
  // error (exit 3). The default suite measures it where the library loads and says why not
  // elsewhere.
  Peer peer = Peer::none;
  bool peer_required = false;
  // Expert-parallel probes: the GPUs (one worker process each; empty: all GPUs) and the
  // `moebench run` arguments of this request that the launcher hands its workers.
  std::vector<int> devices;
  std::vector<std::string> worker_args;
  // Probe ep-step's exchanges by name (--exchange; engine/ep/exchange_names.hpp); empty: its
  // default set, alltoall (where the loaded NCCL has it) and sendrecv. lsa only when named.
  std::vector<std::string> exchanges;
  // --filter: only the cases whose key this regular expression (ECMAScript, searched anywhere
  // in the key) matches run; empty: every case (probes/sweep_plan.hpp).
  std::string case_filter;
  // --engine: the adapter the probes build their engines through, loaded and checked (null:
  // moebench's own engine), and the default suite's probes left out because they cannot.
  std::shared_ptr<const external::AdapterLibrary> adapter;
  std::vector<std::string> left_out_for_adapter;
  // The fixtures folder found (common/fixtures_location.hpp); empty: none, the built-in shapes
  // (engine/shape_library.hpp).
  std::string fixtures_dir;
  bool user_set_shapes = false;
  bool user_set_ms = false;
};

}  // namespace moe
