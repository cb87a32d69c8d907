#pragma once
// An engine built by an adapter (include/moebench/engine_abi.h) over weights moebench generated:
// the counterpart of moe::Engine for the probes that run through --engine. moebench owns the
// weights (a MoeWeights a layer, every tensor its own allocation from the caller's allocator),
// the activations and the stream; the adapter owns whatever it builds from them.
#include <cuda_bf16.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/captured_graph.hpp"
#include "engine/engine.hpp"
#include "engine/external/adapter_library.hpp"
#include "engine/external/layer_description.hpp"
#include "engine/external/lent_device_memory.hpp"
#include "engine/stream.hpp"

namespace moe::external {

class ExternalEngine {
 public:
  // config.layers layers (at least 1) of config.shape in config.format, each with its own
  // weights seeded as moe::Engine seeds them (layer_seed), for steps of up to `max_tokens`. An
  // adapter that declares device-allocator is lent `allocator` for its own device memory too.
  // `descriptors`: null to keep the layers' moebench_layer_weights here, else config.layers of
  // them in caller storage that outlives this engine, so that a later engine hands the adapter
  // descriptors at the very addresses an earlier one did (probe two-engine). Raises the error
  // of a failed create (engine/external/adapter_call.hpp).
  ExternalEngine(std::shared_ptr<const AdapterLibrary> adapter, const EngineConfig& config,
                 int max_tokens, DeviceAllocator& allocator,
                 moebench_layer_weights* descriptors = nullptr);
  // The adapter's destroy first (it must itself wait for, or free behind, the work it
  // enqueued), then a drain, then the weights: moebench frees nothing under running work. A
  // failed destroy is printed, as a destructor cannot raise.
  ~ExternalEngine();
  ExternalEngine(const ExternalEngine&) = delete;
  ExternalEngine& operator=(const ExternalEngine&) = delete;

  // Generates the input x [m, H] from `seed` (m at most max_tokens).
  void set_input(int m, std::uint64_t seed);
  int input_tokens() const { return m_; }
  // Enqueues one step through the adapter: every layer over the input, each into its output.
  void forward();
  // Calls the adapter's destroy now (the destructor then only drains and frees); raises its
  // failure. Probes call it to see the error rather than have it printed.
  void destroy();

  // Graphs (MOEBENCH_CAP_CAPTURE_SAFE_FORWARD): moebench captures the adapter's forward at the
  // current M on its own stream and replays it. Why a capture is refused now (the capability
  // not declared, or no eager forward at this M yet, which the ABI asks for first), or empty.
  std::string capture_blocker() const;
  // Raises Error with capture_blocker's reason, else captures one step (replacing any graph).
  // An adapter that synchronises, allocates or reads back inside breaks the capture: raised.
  void capture();
  void replay();
  bool captured() const { return graph_ != nullptr; }
  void drop_graphs() { graph_.reset(); }

  // Route counts (MOEBENCH_CAP_ROUTE_COUNTS): layer `layer`'s routing in the adapter's current
  // window, and a new window for every layer, ordered on the stream. Each raises the adapter's
  // failure (check_call); try_reset_route_counts returns it instead, for the probe that expects
  // a refusal (a reset inside a capture).
  struct RouteCounts {
    std::vector<std::uint64_t> counts;  // [E]
    std::uint64_t window = 0;
    std::uint32_t flags = 0;             // MOEBENCH_ROUTE_*
  };
  RouteCounts read_route_counts(int layer);
  void reset_route_counts();
  std::string try_reset_route_counts();  // empty when it succeeded, else the failure's line

  int layers() const { return static_cast<int>(weights_.size()); }
  const MoeWeights& weights(int layer) const { return *weights_[static_cast<std::size_t>(layer)]; }
  const moebench_layer_weights& descriptor(int layer) const { return descriptors_[static_cast<std::size_t>(layer)]; }
  const AdapterLibrary& adapter() const { return *adapter_; }
  Stream& stream() { return stream_; }
  const __nv_bfloat16* output(int layer) const;

 private:
  void build(DeviceAllocator& allocator, moebench_layer_weights* descriptors);
  void check_route_counts(const char* function) const;

  std::shared_ptr<const AdapterLibrary> adapter_;
  EngineConfig config_;
  int max_tokens_;
  Stream stream_;  // declared before every member that enqueues on it
  std::vector<std::unique_ptr<MoeWeights>> weights_;
  std::unique_ptr<LentDeviceMemory> lent_;  // MOEBENCH_CAP_DEVICE_ALLOCATOR: the adapter's memory
  std::vector<moebench_layer_weights> own_descriptors_;
  moebench_layer_weights* descriptors_ = nullptr;
  DeviceBuffer x_, out_;
  int m_ = 0;
  std::set<int> eager_ms_;  // the M of every eager forward: a capture needs one at its M
  moebench_engine* handle_ = nullptr;
  std::unique_ptr<CapturedGraph> graph_;  // destroyed after the destructor's destroy and drain
};

}  // namespace moe::external
