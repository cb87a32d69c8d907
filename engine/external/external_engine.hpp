#pragma once
// An engine built by an adapter (include/moebench/engine_abi.h) over weights moebench generated:
// the counterpart of moe::Engine for the probes that run through --engine. moebench owns the
// weights (a MoeWeights a layer, every tensor its own allocation from the caller's allocator),
// the activations and the stream; the adapter owns whatever it builds from them.
#include <cuda_bf16.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.hpp"
#include "engine/external/adapter_library.hpp"
#include "engine/external/layer_description.hpp"
#include "engine/stream.hpp"

namespace moe::external {

class ExternalEngine {
 public:
  // config.layers layers (at least 1) of config.shape in config.format, each with its own
  // weights seeded as moe::Engine seeds them (layer_seed), for steps of up to `max_tokens`.
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

  int layers() const { return static_cast<int>(weights_.size()); }
  const MoeWeights& weights(int layer) const { return *weights_[static_cast<std::size_t>(layer)]; }
  const moebench_layer_weights& descriptor(int layer) const { return descriptors_[static_cast<std::size_t>(layer)]; }
  const AdapterLibrary& adapter() const { return *adapter_; }
  Stream& stream() { return stream_; }
  const __nv_bfloat16* output(int layer) const;

 private:
  void build(DeviceAllocator& allocator, moebench_layer_weights* descriptors);

  std::shared_ptr<const AdapterLibrary> adapter_;
  EngineConfig config_;
  int max_tokens_;
  Stream stream_;  // declared before every member that enqueues on it
  std::vector<std::unique_ptr<MoeWeights>> weights_;
  std::vector<moebench_layer_weights> own_descriptors_;
  moebench_layer_weights* descriptors_ = nullptr;
  DeviceBuffer x_, out_;
  int m_ = 0;
  moebench_engine* handle_ = nullptr;
};

}  // namespace moe::external
