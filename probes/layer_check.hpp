#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/moe_layer.hpp"
#include "reports/report.hpp"

namespace moe {

// What a probe learns from one layer's last forward: its routing as the GPU decided it, and
// how its output compares with the CPU reference. Probes report a timing only after this
// passed (docs/design/measurement.md).
struct LayerCheck {
  bool passed = false;
  double rel_l2 = 0;        // ||out - ref|| / ||ref|| over the checked tokens
  double bound = 0;
  int tokens_checked = 0;
  int routing_mismatches = 0;  // tokens whose top-k differs from the reference beyond a near-tie
  int near_ties = 0;           // tokens whose top-k differs at a near-tie (the GPU's is followed)
  std::string detail;

  report::Check as_check(const std::string& name) const { return {name, passed, detail}; }
};

// What the CPU reference needs to recompute a layer: kept apart from the layer so a probe can
// check an output after the layer itself was destroyed.
struct LayerReference {
  kernels::MoeDims dims;
  std::uint64_t weight_seed = 0;
  std::vector<float> router_bias;  // empty: none
  static LayerReference of(const MoeLayer& layer);
  static LayerReference of(const MoeWeights& weights);
};

// The top-k expert ids the layer's last forward chose, [m, k], read back from its scratch.
std::vector<int> read_topk_ids(const MoeLayer& layer, int m, Stream& stream);

// Distinct routed experts among `ids`, plus the shared experts (every token uses them).
std::set<int> touched_experts(const kernels::MoeDims& dims, const std::vector<int>& ids);

// Compares `out` ([m, H] bf16 on the device, written by the layer's last forward over the input
// generated from `input_seed`) with the CPU reference on up to `max_tokens` tokens spread over
// the batch. Relative-L2 bound 2e-2: the kernels meet ~5e-3 in bf16 and int4 against this
// reference (tests/gpu/test_moe_kernels.cu states why); a wrong expert or a stale pointer gives
// errors of order 1.
LayerCheck check_layer_output(MoeLayer& layer, const __nv_bfloat16* out, int m,
                              std::uint64_t input_seed, int max_tokens = 8);

// The same check from a host copy of the output. With `gpu_ids` null (the layer is gone), a
// token whose top-k is within a near-tie is skipped rather than followed.
LayerCheck check_output(const LayerReference& layer, const std::vector<std::uint16_t>& out, int m,
                        std::uint64_t input_seed, const std::vector<int>* gpu_ids,
                        int max_tokens = 8);

// How many tokens of an M-token output the CPU reference checks in about a fifth of a second
// (it runs in doubles, ~1e9 multiply-adds a second): every token of the test shapes the bug
// probes use, at least `floor` of a model shape. Beyond that, a bit-exact comparison with an
// output already checked covers the rest.
int affordable_tokens(const kernels::MoeDims& dims, int m, int floor = 4);
// The CPU reference's multiply-adds for one token: router, routed and shared experts.
double reference_macs_per_token(const kernels::MoeDims& dims);

// Bit-exact comparison of two device outputs of m x H bf16 (graph replay against eager, two
// runs of one input). Returns the number of differing elements.
std::size_t count_differences(const __nv_bfloat16* a, const std::vector<std::uint16_t>& b_host,
                              std::size_t elements);
std::vector<std::uint16_t> copy_to_host(const __nv_bfloat16* device, std::size_t elements);

}  // namespace moe
