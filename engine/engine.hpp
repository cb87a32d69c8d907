#pragma once
#include <cuda_bf16.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cuda_event.hpp"
#include "engine/captured_graph.hpp"
#include "engine/device.hpp"
#include "engine/moe_layer.hpp"
#include "engine/shape.hpp"
#include "engine/stream.hpp"
#include "engine/residency_policy.hpp"
#include "engine/residency_transition.hpp"
#include "engine/telemetry_window.hpp"
#include "engine/weights_arena.hpp"

namespace moe {

struct EngineConfig {
  Shape shape;
  kernels::WeightFormat format = kernels::WeightFormat::bf16;
  int layers = 0;  // 0: enough that a decode step's working set is >= 4x the L2 (see below)
  int max_layers = 0;  // with layers = 0, a cap on that choice (run option --max-layers); 0: none
  std::uint64_t seed = 1;
  Routing routing = Routing::uniform;
  kernels::ForwardPath path = kernels::ForwardPath::automatic;
  kernels::ForwardOptions options;  // the engine switches (engine_options.hpp)
  double memory_fraction = 0.7;  // of free device memory the weights may take
};

// How many layers an engine gets: enough that one decode step (M=1) touches at least 4x the L2 in
// weights, so a step measures HBM rather than cache (docs/bugs.md, bug 4), at most 32, and no more
// than fit in `memory_fraction` of free memory. `reduced` says the memory cap bit.
struct LayerPlan {
  int layers = 1;
  int wanted = 1;
  bool reduced = false;
  std::size_t layer_bytes = 0;       // all weights of one layer
  std::size_t step_bytes_m1 = 0;     // weights one M=1 step touches in one layer (upper bound)
};
LayerPlan plan_layers(const EngineConfig& config, const Device& device);

// The weights seed of layer `layer` of an engine seeded `engine_seed`: each layer its own weights.
std::uint64_t layer_seed(std::uint64_t engine_seed, int layer);

// The engine the probes drive: a stack of MoE layers for a shape, their activations, the
// stream and the per-M graphs. One decode step runs every layer over the same input (each into
// its own output), so its working set is the whole stack's touched experts. Building and
// destroying one is the lifecycle the probes exercise; the destructor drains first.
class Engine {
 public:
  // `arena`, when given, holds the layers' MoeWeights objects (slot i for layer i).
  Engine(const EngineConfig& config, DeviceAllocator& allocator, const Device& device,
         WeightsArena* arena = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Generates the input x [m, H] from `seed` (grows the activations, draining first).
  void set_input(int m, std::uint64_t seed);
  int input_tokens() const { return m_; }
  // Enqueues one eager decode step over the current input.
  void forward();
  // Why capture at the current M would fail, or nothing.
  std::optional<std::string> capture_blocker() const;
  // Captures a step at the current M. With `check_first`, refuses (moe::Error) with the
  // blocker's reason; without, lets the capture run into whatever would break it (probes
  // check that the lower layers refuse on their own).
  void capture(bool check_first = true);
  bool captured() const { return graphs_.count(m_) != 0; }
  // Replays the graph of the current M. A graph whose layers' scratch blocks moved since its
  // capture (an eager step at a larger M regrew a pool, freeing the block the graph holds) is
  // captured again first: replaying it would read and write memory that is no longer its own.
  void replay();
  void drop_graphs() { graphs_.clear(); }
  // Graphs captured again by replay() because their scratch had moved.
  std::size_t graphs_recaptured() const { return graphs_recaptured_; }

  // Route telemetry (docs/bugs.md, bug 5), one record a layer. arm() opens window 1 (allocates, copies,
  // launches no kernel) and drops the graphs captured before it: they were captured without
  // the record and would not accumulate. Each call raises BoundaryRefused, with nothing
  // changed, when the boundary is not safe (checked before any drain): arm and reset while
  // capturing or while a replay is in flight; reset and snapshot also when not armed.
  void arm_telemetry();
  // The only way a window advances: drains, bumps the epoch, rewrites every record in place
  // (same device address, so captured graphs stay valid) as an empty window.
  void reset_telemetry_at_boundary();
  // Drains and copies every layer's record, validated (validate_window): a poisoned,
  // overflowed, stale or foreign window raises BoundaryRefused naming the layer and why.
  std::vector<TelemetryWindow> telemetry_snapshot();
  // The same copies unvalidated, for evidence (what a refused window held).
  std::vector<TelemetryWindow> telemetry_windows();
  const TelemetryEpochs& telemetry_epochs() const { return telemetry_epochs_; }
  TelemetryIdentity telemetry_identity(int layer) const;
  // Capturing, or a replay not yet ended (the capture check comes first: no event query
  // happens inside a capture).
  BoundaryState boundary_state() const;
  // This engine's instance number, unique in the process (never an address).
  std::uint64_t instance() const { return instance_; }

  // Expert residency (docs/bugs.md, bug 6): moves layer `layer`'s routed experts to `plan` at a safe
  // boundary. Refused (BoundaryRefused, nothing changed, checked before any drain) while the
  // stream is capturing, while a replay is in flight, and while any captured graph exists:
  // graphs hold the layer's pointer tables, which a transition replaces. The engine does not
  // drop graphs behind its user's back; drop_graphs() first and capture again after. A fault
  // (ResidencyFault) rolls the transition back (MoeWeights::apply_residency).
  void apply_residency(int layer, const ResidencyPlan& plan, ResidencyFaultPoint fault = {});

  int layers() const { return static_cast<int>(layers_.size()); }
  MoeLayer& layer(int i) { return *layers_[static_cast<std::size_t>(i)]; }
  const LayerPlan& plan() const { return plan_; }
  const EngineConfig& config() const { return config_; }
  Stream& stream() { return stream_; }
  const __nv_bfloat16* input() const { return x_.as<__nv_bfloat16>(); }
  const __nv_bfloat16* output(int layer) const;
  std::size_t weight_bytes() const;

 private:
  void ensure_activations(int m);

  EngineConfig config_;
  DeviceAllocator& allocator_;
  LayerPlan plan_;
  Stream stream_;  // declared before every member that enqueues on it
  std::vector<std::unique_ptr<MoeLayer>> layers_;
  DeviceBuffer x_;
  DeviceBuffer out_;
  int capacity_m_ = 0;
  int m_ = 0;
  // A graph and the scratch blocks (one a layer) it was captured with.
  struct CapturedStep {
    std::unique_ptr<CapturedGraph> graph;
    std::vector<const void*> scratch;
  };
  std::vector<const void*> scratch_blocks() const;
  bool scratch_moved(const CapturedStep& step) const;

  std::map<int, CapturedStep> graphs_;  // per M
  std::size_t graphs_recaptured_ = 0;
  // Under Mutation::replay_skips_work only: the input and M of the last replay.
  const void* last_replay_input_ = nullptr;
  int last_replay_m_ = 0;
  std::uint64_t instance_ = 0;
  int device_ordinal_ = 0;
  TelemetryEpochs telemetry_epochs_;
  std::unique_ptr<CudaEvent> replay_done_;  // recorded after each replay while armed
};

}  // namespace moe
