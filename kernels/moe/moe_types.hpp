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
// the mma family reads) or the mma fragment layout (int4_mma_layout.hpp, the mma family's).
enum class Int4Layout { rows, mma_fragments };
enum class Scoring { softmax, sigmoid };
// Which expert-GEMM kernels the forward uses. automatic picks by M (see forward.hpp).
enum class ForwardPath { automatic, decode, tensor_core };

std::string_view to_string(WeightFormat f);
std::string_view to_string(Scoring s);
std::string_view to_string(ForwardPath p);

// Dimensions of one MoE layer. Shared experts have the routed experts' intermediate size and
// are stored after the routed ones: expert index E..E+S-1, every token, weight 1.
struct MoeDims {
  int hidden = 0;       // H
  int inter = 0;        // I, per expert
  int experts = 0;      // E routed experts
  int shared = 0;       // S shared experts
  int top_k = 0;
  Scoring scoring = Scoring::softmax;
  bool renormalize = true;  // divide the top-k weights by their sum
  WeightFormat format = WeightFormat::bf16;

  int total_experts() const { return experts + shared; }
};

// Per-expert device pointer tables: the resident state of the fast path (docs/bugs.md, bug 1). The
// engine's ResidentSlot owns the device arrays; kernels only read them. Each array has
// total_experts() entries. For bf16 the *_scales entries are null.
struct ExpertTable {
  const void* const* gate_up = nullptr;         // [2I, H]: rows 0..I-1 gate, I..2I-1 up
  const void* const* gate_up_scales = nullptr;  // int4: [2I, ceil(H/128)] bf16
  const void* const* down = nullptr;            // [H, I]
  const void* const* down_scales = nullptr;     // int4: [H, ceil(I/128)] bf16
};

// What the generator draws for each tensor; part of the counter so no two tensors correlate.
enum class TensorKind : std::uint32_t {
  router = 1,
  gate_up = 2,
  down = 3,
  input = 4,
  int4_scale_gate_up = 5,
  int4_scale_down = 6,
};

}  // namespace moe::kernels
