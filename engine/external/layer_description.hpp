#pragma once
// A layer as the engine ABI hands it to an adapter: its description from moebench's
// dimensions, and its weights as the device pointers of moebench's MoeWeights.
#include <vector>

#include "engine/moe_weights.hpp"
#include "kernels/moe/moe_types.hpp"
#include "moebench/engine_abi.h"

namespace moe::external {

moebench_layer_desc describe_layer(const kernels::MoeDims& dims);

// The pointer tables of one layer's weights (host arrays of device pointers, one entry an
// expert, routed then shared), which the ABI's moebench_layer_weights points into: it is valid
// while this object and the weights live. Weights handed to an adapter are in the int4 row
// layout (kernels/moe/int4_format.hpp), the one the ABI documents.
class LayerWeightsTables {
 public:
  explicit LayerWeightsTables(const MoeWeights& weights);
  LayerWeightsTables(const LayerWeightsTables&) = delete;
  LayerWeightsTables& operator=(const LayerWeightsTables&) = delete;
  // Writes the descriptor into `out` (which may live elsewhere, e.g. at a fixed address).
  void fill(moebench_layer_weights& out) const;

 private:
  const MoeWeights& weights_;
  std::vector<const void*> gate_up_, gate_up_scales_, down_, down_scales_;
};

}  // namespace moe::external
