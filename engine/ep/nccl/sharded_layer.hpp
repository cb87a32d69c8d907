#pragma once
// One MoE layer sharded over the ranks of a communicator. Every rank holds the router and the
// shared experts (replicated) and the routed experts the map gives it. A step, enqueue-only
// and of fixed sizes (capturable once warm):
//   route     the existing route stage on this rank's own m tokens
//   dispatch  pack (plan + records into fixed-capacity per-destination blocks, counts in the
//             block headers) and the exchange
//   compute   this rank's experts on the received rows (the per-row kernel, or grouped into
//             the forward's expert GEMMs: ForwardOptions::ep_compute), the shared experts on
//             its own tokens
//   combine   the return exchange of per-row partial sums, then out = partials in rank order
//             plus the shared experts' sum, rounded to bf16
// Building the layer runs the expert-map handshake (unless the mutation skips it).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/device_allocator.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/nccl/communicator.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/ep/nccl/lsa_exchange.hpp"
#include "engine/ep/rendezvous.hpp"
#include "engine/ep/wire_layout.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe::ep {

struct ShardedLayerConfig {
  kernels::MoeDims dims;   // bf16 only
  std::uint64_t seed = 1;  // weights from the counter-based generator, the same on every rank
  int m = 1;               // tokens per rank
  int capacity = 0;        // rows per destination block; 0: m (never overflows)
  ExchangeKind exchange = ExchangeKind::sendrecv;
  // The engine's switches (EngineOptions::forward()): the route's kernels, ep_compute and,
  // on the grouped path, the expert GEMM family.
  kernels::ForwardOptions options;
  bool skip_map_handshake = false;  // mutation: build without agreeing on the map
};

// GPU time of each part of the last timed step, in microseconds.
struct StepTimes {
  float route_us = 0, dispatch_us = 0, compute_us = 0, combine_us = 0;
};

class ShardedLayer {
 public:
  ShardedLayer(const ShardedLayerConfig& config, const ExpertMap& map, Communicator& comm,
               Rendezvous& rendezvous, DeviceAllocator& allocator, cudaStream_t stream);
  // Returns at once, also with a step in flight: the buffers go back to the allocator
  // stream-ordered (DeviceAllocator::release_after), once the stream's work has finished.
  // With the lsa exchange the window's release waits for the stream first, bounded by twice
  // the timeout (LsaExchange's destructor).
  ~ShardedLayer();
  ShardedLayer(const ShardedLayer&) = delete;
  ShardedLayer& operator=(const ShardedLayer&) = delete;

  // Writes this rank's tokens [m, H] bf16 (generated input rows first_token .. + m - 1).
  void generate_input(int first_token);
  // Writes this rank's tokens from the host, [m, H] floats rounded to bf16 (the rank-coded
  // rows of engine/ep/rank_coded_payload.hpp, say).
  void set_input(const std::vector<float>& rows);
  // Enqueues one step over the first `active` tokens (0: all m; at most m); with `timed`,
  // events around each part (read with finish()).
  void enqueue_step(bool timed = false, int active = 0);
  // Waits for the step (watchdog), raises CapacityOverflow / a corrupt-block error from the
  // device status word, and returns the part times when the step was timed.
  StepTimes finish(const std::string& what);

  std::vector<float> output_host();  // [m, H] as floats (rows past the last step's active: stale)
  std::vector<float> input_host();   // [m, H] as floats
  // The step's output [m, H] bf16 on the device (for a copy queued behind a step).
  const void* output_device() const { return out_.data(); }
  // Host copies of the last finished step's dispatch send and receive buffers
  // (wire().dispatch_bytes() each), for the exchange checks (engine/ep/receive_counts.hpp).
  std::vector<unsigned char> dispatch_sent_host();
  std::vector<unsigned char> dispatch_received_host();
  // The device addresses of the dispatch and combine receive buffers.
  std::vector<const void*> receive_buffers() const;
  const WireLayout& wire() const { return wire_; }
  const ExpertMap& map() const { return map_; }
  int m() const { return config_.m; }
  int local_experts() const { return static_cast<int>(map_.experts_of(comm_.rank()).size()); }
  // Meaningful bytes this rank sent in the last finished step (both exchanges): its rows and
  // block headers; the exchanges move the fixed blocks whatever the counts.
  std::size_t wire_bytes_sent();
  std::size_t exchanged_bytes() const { return wire_.dispatch_bytes() + wire_.combine_bytes(); }

 private:
  ShardedLayerConfig config_;
  ExpertMap map_;
  Communicator& comm_;
  DeviceAllocator& allocator_;
  cudaStream_t stream_;
  WireLayout wire_;
  std::vector<DeviceBuffer> weights_;  // router, local experts, shared experts
  DeviceBuffer router_, gate_up_table_, down_table_, shared_gate_up_table_, shared_down_table_;
  DeviceBuffer owner_, local_index_, scratch_, x_, out_, shared_out_, row_of_, status_;
  DeviceBuffer grouped_;  // the grouped path's scratch (kernels::ep::grouped_rows_layout), else empty
  // The receive buffers as the step reads them: the allocator's blocks below for the NCCL
  // collectives, the symmetric window of lsa_ for the lsa exchange.
  struct ReceiveBuffer {
    unsigned char* ptr = nullptr;
    void* data() const { return ptr; }
    template <class T>
    T* as() const { return reinterpret_cast<T*>(ptr); }
  };
  DeviceBuffer send_, recv_blocks_, combine_send_, combine_recv_blocks_;
  ReceiveBuffer recv_, combine_recv_;
  std::unique_ptr<LsaExchange> lsa_;  // the lsa exchange's window and device communicator
  DeviceBuffer previous_counts_;  // [ranks]: read only under the mutation ep-reuse-counts
  std::size_t scratch_bytes_ = 0;
  cudaEvent_t events_[5] = {};
};

}  // namespace moe::ep
