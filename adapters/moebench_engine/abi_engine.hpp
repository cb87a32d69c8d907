#pragma once
// The engine an adapter built on moebench's kernels creates: its layers (dimensions, router and
// the resident pointer table its kernels read), one scratch sized for max_tokens at create so
// forward neither allocates nor waits (capture-safe), and the streams forward was given, which
// destroy waits for, and a route count record a layer (abi_route_counts.hpp). Where a layer's resident table lives is the adapter's choice: moebench's own
// adapter makes it a member of the engine (moebench_engine_adapter.cpp).
#include <cuda_runtime_api.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adapters/moebench_engine/abi_layer.hpp"
#include "adapters/moebench_engine/abi_route_counts.hpp"
#include "kernels/moe/forward.hpp"

namespace moe::adapter {

// A memory source over the allocator moebench lends (engine_abi.h, moebench_device_allocator).
inline DeviceMemorySource lent_memory(const moebench_device_allocator& lent) {
  return {[lent](std::size_t bytes) -> void* {
            void* block = nullptr;
            moebench_error error{sizeof(moebench_error), {}};
            const moebench_status s = lent.allocate(lent.context, bytes, &block, &error);
            if (s == MOEBENCH_ERROR_OUT_OF_MEMORY) return nullptr;
            if (s != MOEBENCH_OK || !block)
              throw Error(ExitCode::probe_error, "the allocator moebench lent failed for " + std::to_string(bytes) +
                                                     " bytes: " + std::string(error.message));
            return block;
          },
          [lent](void* block) { lent.release(lent.context, block); }};
}

class AbiEngine {
 public:
  struct Layer {
    kernels::MoeDims dims;
    const moebench_layer_weights* weights = nullptr;  // valid during create only
    kernels::ExpertTable experts;                     // the resident table the kernels read
  };

  // Checks the description and reads its layers (dims and weights; tables still empty). Returns
  // MOEBENCH_OK or the error written.
  moebench_status read(const moebench_engine_desc& desc, moebench_error* error) {
    if (!MOEBENCH_ABI_HAS_FIELD(&desc, moebench_engine_desc, stream) || !desc.layer || !desc.weights ||
        desc.layers < 1 || desc.max_tokens < 1)
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "engine description too small or empty");
    // Memory moebench lends (minor 1) is where every buffer of this engine comes from; else its own.
    if (MOEBENCH_ABI_HAS_FIELD(&desc, moebench_engine_desc, allocator) && desc.allocator)
      allocator_ = std::make_unique<DeviceAllocator>(DeviceAllocator::Mode::plain, DeviceAllocator::Freed::reuse,
                                                     lent_memory(*desc.allocator));
    else
      allocator_ = std::make_unique<DeviceAllocator>();
    kernels::MoeDims dims;
    if (!read_layer(*desc.layer, dims, error)) return MOEBENCH_ERROR_UNSUPPORTED;
    for (int l = 0; l < desc.layers; ++l) {
      const moebench_layer_weights* w = desc.weights[l];
      if (!w || w->struct_size < sizeof(moebench_layer_weights) || w->total_experts != dims.total_experts())
        return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "layer %d: weights missing, too small or not %d experts",
                    l, dims.total_experts());
      layers_.push_back({dims, w, {}});
      routers_.push_back({static_cast<const __nv_bfloat16*>(w->router), w->router_bias, w->selection_bias});
    }
    max_tokens_ = desc.max_tokens;
    if (options_.preload_kernels) kernels::preload_forward_kernels(dims, options_, kernels::Int4Layout::rows);
    scratch_ = allocator_->allocate(kernels::forward_scratch_bytes(dims, max_tokens_));
    route_counts_.allocate(*allocator_, desc.layers, dims.experts, desc.stream);
    return MOEBENCH_OK;
  }

  std::vector<Layer>& layers() { return layers_; }
  RouteCountRecords& route_counts() { return route_counts_; }
  DeviceAllocator& allocator() { return *allocator_; }

  // Enqueues every layer over the input on the stream (they share the scratch in stream order).
  moebench_status forward(const moebench_forward_args& args, moebench_error* error) {
    if (args.struct_size < sizeof(moebench_forward_args) || !args.input || !args.outputs)
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "forward arguments missing or too small");
    if (args.tokens < 1 || args.tokens > max_tokens_)
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "%d tokens; the engine was built for 1..%d", args.tokens,
                  max_tokens_);
    streams_.insert(args.stream);
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      kernels::MoeForwardArgs a;
      a.dims = layers_[l].dims;
      a.m = args.tokens;
      a.x = static_cast<const __nv_bfloat16*>(args.input);
      a.out = static_cast<__nv_bfloat16*>(args.outputs[l]);
      a.router = routers_[l].router;
      a.router_bias = routers_[l].bias;
      a.selection_bias = routers_[l].selection_bias;
      a.experts = layers_[l].experts;
      a.telemetry = route_counts_.view(l);
      a.scratch = scratch_.data();
      a.scratch_bytes = scratch_.bytes();
      a.options = options_;
      kernels::enqueue_moe_forward(a, args.stream);
    }
    return MOEBENCH_OK;
  }

  // Waits for every stream forward was given: their work reads this engine's memory.
  moebench_status wait_for_forwards(moebench_error* error) {
    for (cudaStream_t s : streams_)
      if (const cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess)
        return fail(error, MOEBENCH_ERROR_CUDA, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
    return MOEBENCH_OK;
  }

 private:
  struct Router {
    const __nv_bfloat16* router;
    const float* bias;
    const float* selection_bias;
  };
  std::unique_ptr<DeviceAllocator> allocator_;  // first: the buffers below are its
  std::vector<Layer> layers_;
  std::vector<Router> routers_;
  DeviceBuffer scratch_;
  RouteCountRecords route_counts_;  // armed for every forward: the route kernel only accumulates
  kernels::ForwardOptions options_;  // moebench's defaults, which read int4 in the row layout the ABI hands over
  int max_tokens_ = 0;
  std::set<cudaStream_t> streams_;
};

}  // namespace moe::adapter
