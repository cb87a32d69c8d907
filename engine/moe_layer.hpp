#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/moe_weights.hpp"
#include "engine/route_telemetry_record.hpp"
#include "engine/scratch_pool.hpp"
#include "kernels/moe/forward.hpp"

namespace moe {

class Stream;

struct LayerConfig {
  kernels::MoeDims dims;
  std::uint64_t seed = 1;
  Routing routing = Routing::uniform;
  kernels::ForwardPath path = kernels::ForwardPath::automatic;
  kernels::ForwardOptions options;  // the engine switches (engine_options.hpp)
};

// One MoE layer: its weights (constructed in caller-given host storage when asked, so a probe
// can force address reuse), its scratch pool, and the forward. Work goes to the stream given at
// construction; the destructor drains it before anything is freed, because kernels enqueued by
// forward() may still be reading the weights and the scratch (docs/bugs.md, bug 2).
class MoeLayer {
 public:
  // `weights_storage`: null to own the weights' host memory, else sizeof(MoeWeights) bytes,
  // suitably aligned, that outlive this layer.
  MoeLayer(const LayerConfig& config, DeviceAllocator& allocator, Stream& stream,
           void* weights_storage = nullptr);
  ~MoeLayer();
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  // Enqueues the layer over x [m, H] into out [m, H]. Enqueue-only: no host sync or readback,
  // so it can be captured; grows scratch (with a drain) if m is new and larger.
  void forward(const __nv_bfloat16* x, __nv_bfloat16* out, int m);

  // Why a capture at this M would fail now, or nothing if it would succeed.
  std::optional<std::string> capture_blocker(int m) const;

  const LayerConfig& config() const { return config_; }
  // The expert GEMM kernels a forward of m tokens runs on a device of compute capability sm
  // (major * 10 + minor): what a report says its figure is of.
  kernels::ExpertGemmKernels expert_gemm_kernels(int m, int sm) const;
  MoeWeights& weights() { return *weights_; }
  const MoeWeights& weights() const { return *weights_; }
  ScratchPool& scratch() { return scratch_; }
  // The scratch of the last forward (routing decisions are read from it).
  const void* last_scratch() const { return last_scratch_; }
  // The resident table the last forward handed the kernels (device arrays; null before any):
  // probes read it back to prove the fast path ran on this layer's own experts.
  const kernels::ExpertTable& last_expert_table() const { return last_experts_; }
  Stream& stream() { return stream_; }
  std::size_t forwards() const { return forwards_; }

  // Route telemetry (docs/bugs.md, bug 5): the record this layer's route kernel accumulates into from
  // the next forward on (the engine checks the boundary and drains). Null while disarmed.
  void arm_telemetry(const TelemetryIdentity& identity, std::uint64_t epoch);
  RouteTelemetryRecord* telemetry() { return telemetry_.get(); }
  const RouteTelemetryRecord* telemetry() const { return telemetry_.get(); }
  // Fault point of probe route-telemetry: from the next forward on, record pair (token 0,
  // slot 0) as expert `id` (nullopt: off). Routing is unchanged.
  void inject_telemetry_id(std::optional<int> id) { telemetry_inject_id_ = id; }

 private:
  LayerConfig config_;
  Stream& stream_;
  DeviceAllocator& allocator_;
  void* owned_storage_ = nullptr;
  MoeWeights* weights_ = nullptr;
  ScratchPool scratch_;
  const void* last_scratch_ = nullptr;
  kernels::ExpertTable last_experts_;
  std::size_t forwards_ = 0;
  std::unique_ptr<RouteTelemetryRecord> telemetry_;
  std::optional<int> telemetry_inject_id_;
};

}  // namespace moe
