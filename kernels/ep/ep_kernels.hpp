#pragma once
// Device side of one expert-parallel step, around the exchanges (engine/ep/wire_layout.hpp has
// the bytes): plan + pack each token into the send block of every rank that owns one of its
// experts, run a rank's experts on the rows it received, and combine the returned partial sums
// in rank order. Enqueue-only and fixed-size, so a steady step is capturable; no
// floating-point atomics: every output element has one writer and a fixed summation order.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/forward.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe::kernels::ep {

// The wire geometry the kernels need (engine/ep/wire_layout.hpp's WireLayout, as sizes).
struct WireGeometry {
  int hidden = 0;
  int top_k = 0;
  int ranks = 0;
  int capacity = 0;
  std::size_t dispatch_row_bytes = 0;
  std::size_t dispatch_block_bytes = 0;
  std::size_t combine_row_bytes = 0;
  std::size_t combine_block_bytes = 0;
  std::size_t meta_bytes = 0;
  std::size_t header_bytes = 16;
};

// Status the kernels raise (a device word the host reads after the step).
enum StatusBits : unsigned { kCapacityOverflow = 1u, kBadCount = 2u, kBadExpert = 4u };

struct PackArgs {
  WireGeometry wire;
  int m = 0;
  int experts = 0;                    // routed experts E
  const int* topk_ids = nullptr;      // [m, k] global expert ids (the route stage's)
  const float* topk_weights = nullptr;// [m, k]
  const int* owner = nullptr;         // [E] rank owning each expert
  const int* local_index = nullptr;   // [E] its index in the owner's bank
  const __nv_bfloat16* x = nullptr;   // [m, H]
  unsigned char* send = nullptr;      // ranks * dispatch_block_bytes
  int* row_of = nullptr;              // [m, ranks] record of token t in block d, or -1
  unsigned* status = nullptr;         // ORed StatusBits
};
// Plans (one block: token order, a ballot scan per destination) and writes the block headers
// and records. Rows over the capacity are dropped and raise kCapacityOverflow. ranks <= 32.
void enqueue_pack_dispatch(const PackArgs& args, cudaStream_t stream);

// Each file's kernels loaded on the current device now, so a step's first launch of one never
// waits for the device's work in flight (kernels/moe/launch.cuh, load_kernel).
void preload_pack_dispatch_kernels();
void preload_expert_rows_kernels();    // the received rows' and the shared rows' kernels
void preload_grouped_rows_kernels();
void preload_combine_returned_kernel();

struct ExpertRowsArgs {
  WireGeometry wire;
  MoeDims dims;                        // hidden, inter (format bf16)
  int local_experts = 0;
  const void* const* gate_up = nullptr;  // [local_experts] device pointers, bf16 [2I, H]
  const void* const* down = nullptr;     // [local_experts] bf16 [H, I]
  const unsigned char* recv = nullptr;   // ranks * dispatch_block_bytes (as received)
  unsigned char* combine_send = nullptr; // ranks * combine_block_bytes: partial per record
  unsigned* status = nullptr;
  // Null: each block's count is read from its header, as it must be. Non-null only under the
  // mutation ep-reuse-counts: the counts the previous step received ([ranks]).
  const int* stale_counts = nullptr;
};
// For every valid record of every block: partial[n] = sum over its slots in slot order of
// weight * expert(hidden)[n], float, into the same record of the same block of combine_send
// (so it returns to its source). h is rounded to bf16 as the single-device forward stores it.
void enqueue_expert_rows(const ExpertRowsArgs& args, cudaStream_t stream);

// The grouped path (ForwardOptions::ep_compute, received_grouping.hpp): the received records
// as a batch of ranks * capacity tokens for the forward's expert GEMM stages. Its scratch holds
// the batch's forward scratch (route-stage outputs, h, down_out) and its input rows.
struct GroupedRowsLayout {
  MoeDims batch;          // the layer's dims over the local experts: E local, no shared, plain routing
  int rows = 0;           // ranks * capacity
  ScratchLayout forward;  // at offset 0
  std::size_t x = 0;      // bf16 [rows, H]: record r of block s at row s * capacity + r
  std::size_t total = 0;
};
GroupedRowsLayout grouped_rows_layout(const MoeDims& layer, const WireGeometry& wire, int local_experts);

struct GroupedRowsArgs {
  WireGeometry wire;
  MoeDims dims;                          // the layer's (hidden, inter, top_k, format)
  int local_experts = 0;
  ExpertTable experts;                   // the rank's bank, [local_experts] entries (scales for int4)
  ForwardOptions options;                // the GEMM family (gemm; M = ranks * capacity), pdl, int4 decode
  const unsigned char* recv = nullptr;   // as in ExpertRowsArgs
  unsigned char* combine_send = nullptr;
  unsigned* status = nullptr;
  const int* stale_counts = nullptr;     // as in ExpertRowsArgs (mutation ep-reuse-counts)
  void* scratch = nullptr;               // grouped_rows_layout(...).total bytes, 256-byte aligned
  std::size_t scratch_bytes = 0;
};
// The forward's arguments of the batch (x, scratch, experts, options) for the GEMM stages.
MoeForwardArgs grouped_batch_args(const GroupedRowsArgs& args, const GroupedRowsLayout& layout);
// The same result as enqueue_expert_rows, through the engine's expert GEMMs: a grid copies each
// valid record's hidden row into the batch and its slots into topk_ids / topk_weights, one
// block groups the pairs (no atomics on the order), gate_up and down run on the family the
// options and M select (enqueue_expert_gemms), and each valid record's combine row is the sum
// over its slots in slot order of weight * down_out, float. Raises kBadCount / kBadExpert as
// enqueue_expert_rows does (and kBadExpert for an expert repeated within a record).
void enqueue_grouped_rows(const GroupedRowsArgs& args, cudaStream_t stream);

struct SharedRowsArgs {
  MoeDims dims;
  int m = 0;
  const __nv_bfloat16* x = nullptr;      // [m, H]
  const void* const* gate_up = nullptr;  // [S]
  const void* const* down = nullptr;     // [S]
  float* out = nullptr;                  // [m, H]: sum over shared experts in order, weight 1
};
// The shared experts on this rank's own tokens (nothing crosses the link for them).
void enqueue_shared_rows(const SharedRowsArgs& args, cudaStream_t stream);

struct CombineArgs {
  WireGeometry wire;
  int m = 0;
  const int* row_of = nullptr;               // [m, ranks] from the pack
  const unsigned char* combine_recv = nullptr; // ranks * combine_block_bytes, block d from rank d
  const float* shared = nullptr;             // [m, H] or null (no shared experts)
  __nv_bfloat16* out = nullptr;              // [m, H]
};
// out[t] = bf16(sum over d in rank order of partial(d, row_of[t][d]) + shared[t]).
void enqueue_combine_returned(const CombineArgs& args, cudaStream_t stream);

}  // namespace moe::kernels::ep
