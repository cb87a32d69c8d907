#pragma once
// The contract between the engine (host objects that own memory) and the MoE kernels (which
// only see dimensions, pointers and a stream). Kept free of CUDA headers beyond the runtime
// API so host-only code (fixtures, reports) can include it.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace moe::kernels {

enum class WeightFormat { bf16, int4 };
// Where an int4 tensor's codes and scales sit: rows (int4_format.hpp, what every kernel but
// the mma and stream families reads), the mma fragment layout (int4_mma_layout.hpp, the mma
// family's) or the stream family's tiles (int4_stream_layout.hpp: the fragment layout with
// each word's codes interleaved).
enum class Int4Layout { rows, mma_fragments, stream_tiles };
// Where a bf16 tensor's values sit: rows ([rows, K] row major, what every kernel but the stream
// family reads) or the stream family's stage tiles (bf16_stream_layout.hpp).
enum class Bf16Layout { rows, stream_tiles };
// Where a layer's weights sit, both formats' (each format reads its own field), as the rules of
// forward_options.hpp take it. From an Int4Layout alone, bf16 in rows.
struct WeightLayouts {
  Int4Layout int4 = Int4Layout::rows;
  Bf16Layout bf16 = Bf16Layout::rows;
  constexpr WeightLayouts() = default;
  constexpr WeightLayouts(Int4Layout i, Bf16Layout b = Bf16Layout::rows) : int4(i), bf16(b) {}  // NOLINT: implicit
  constexpr bool operator==(const WeightLayouts&) const = default;
};
enum class Scoring { softmax, sigmoid };
// How a token's experts are chosen (DeepSeek's `topk_method`): greedy is plain top-k over the
// scores; group_limited_greedy (DeepSeek-V2) ranks groups of experts by their best score and
// keeps the best topk_group; noaux_tc (DeepSeek-V3) adds a per-expert correction bias to the
// scores for the choice only and ranks groups by the sum of their two best biased scores.
enum class TopKMethod { greedy, group_limited_greedy, noaux_tc };
// Which expert-GEMM kernels the forward uses. automatic picks by M (see forward.hpp).
enum class ForwardPath { automatic, decode, tensor_core };

std::string_view to_string(WeightFormat f);
std::string_view to_string(Scoring s);
std::string_view to_string(TopKMethod t);
std::string_view to_string(ForwardPath p);
std::string_view to_string(Int4Layout l);
std::string_view to_string(Bf16Layout l);

// Dimensions of one MoE layer. Shared experts have the routed experts' intermediate size and
// are stored after the routed ones: expert index E..E+S-1, every token, weight 1 (or the
// shared gate). A wider shared MLP is S experts of the routed width: its down projection sums
// over the S slices, so their weighted sum is the same layer.
struct MoeDims {
  int hidden = 0;       // H
  int inter = 0;        // I, per expert
  int experts = 0;      // E routed experts
  int shared = 0;       // S shared experts
  int top_k = 0;
  Scoring scoring = Scoring::softmax;
  bool renormalize = true;  // divide the top-k weights by their sum
  WeightFormat format = WeightFormat::bf16;
  // Routing of real configs (docs/configs.md); every default is the plain top-k layer.
  TopKMethod topk_method = TopKMethod::greedy;
  int n_group = 1;                 // experts in n_group groups of E / n_group (grouped methods)
  int topk_group = 1;              // groups kept before the top-k over their experts
  float routed_scaling = 1.0f;     // the routed weights times this (after renormalisation)
  bool shared_gate = false;        // Qwen2-MoE: shared slots weighted by sigmoid(x . router row E)
  bool scale_input = false;        // Llama-4: the routed expert's input is x * w, its output unweighted

  int total_experts() const { return experts + shared; }
  // Router rows: E, plus the shared gate's row (row E) when there is one.
  int router_rows() const { return experts + (shared_gate ? 1 : 0); }
  // The choice uses groups (group_limited_greedy, noaux_tc) and, for noaux_tc, the correction bias.
  bool grouped() const { return topk_method != TopKMethod::greedy; }
  bool selection_bias() const { return topk_method == TopKMethod::noaux_tc; }
  // Plain top-k with softmax/sigmoid weights and nothing else: the route kernels' fast path.
  bool plain_routing() const {
    return topk_method == TopKMethod::greedy && routed_scaling == 1.0f && !shared_gate && !scale_input;
  }
};

// Per-expert device pointer tables: the resident state of the fast path (docs/bugs.md, bug 1). The
// engine's ResidentSlot owns the device arrays; kernels only read them. Each array has
// total_experts() entries. For bf16 the *_scales entries are null.
struct ExpertTable {
  const void* const* gate_up = nullptr;         // [2I, H]: rows 0..I-1 gate, I..2I-1 up
  const void* const* gate_up_scales = nullptr;  // int4: [2I, ceil(H/128)] bf16
  const void* const* down = nullptr;            // [H, I]
  const void* const* down_scales = nullptr;     // int4: [H, ceil(I/128)] bf16
  // Where the int4 codes and scales sit (the layer's int4_layout(options), forward_options.hpp):
  // the forward refuses a table whose layout its options do not read.
  Int4Layout int4_layout = Int4Layout::rows;
  // Where bf16 weights sit (the layer's bf16_layout(options)), refused the same way.
  Bf16Layout bf16_layout = Bf16Layout::rows;

  WeightLayouts layouts() const { return {int4_layout, bf16_layout}; }
};

// What the generator draws for each tensor; part of the counter so no two tensors correlate.
enum class TensorKind : std::uint32_t {
  router = 1,
  gate_up = 2,
  down = 3,
  input = 4,
  int4_scale_gate_up = 5,
  int4_scale_down = 6,
  score_correction_bias = 7,  // noaux_tc's per-expert bias [E], fp32
};

}  // namespace moe::kernels
