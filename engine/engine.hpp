#pragma once
#include <cuda_bf16.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/captured_graph.hpp"
#include "engine/device.hpp"
#include "engine/moe_layer.hpp"
#include "engine/shape.hpp"
#include "engine/stream.hpp"
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
  void replay();
  void drop_graphs() { graphs_.clear(); }

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
  std::map<int, std::unique_ptr<CapturedGraph>> graphs_;  // per M
};

}  // namespace moe
