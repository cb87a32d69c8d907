#pragma once
// The bytes that cross the link, the same on the GPU and in the CPU reference.
//
// Dispatch: every rank has one send buffer of `ranks` fixed-size blocks, block d going to rank
// d, and one receive buffer of `ranks` blocks, block s coming from rank s. A block is a 16-byte
// header (int32 row count, then padding) followed by `capacity` row records; only the first
// `count` records are meaningful. The count travels in the same bytes as the rows, so the
// receiver never uses a count from another step, and the sizes never change, so a steady step
// is capturable in a CUDA graph. A row record is one token for one destination rank (a token
// routed to several experts of one rank crosses the link once):
//   int32 token            the token's index on its source rank
//   int32 expert[top_k]    for each routed slot, the expert's index in the destination's bank
//                          (ExpertMap::local_index) when the destination owns it, else -1
//   float weight[top_k]    the slot's routing weight
//   padding to 16 bytes, then bf16 hidden[H]
// Combine: the same block structure with a row of float partial[H] per received row, in the
// order the rows arrived: the destination's weighted sum over the slots it owns (slot order).
#include <cstddef>

#include "kernels/ep/ep_kernels.hpp"

namespace moe::ep {

struct WireLayout {
  int hidden = 0;
  int top_k = 0;
  int ranks = 0;
  int capacity = 0;  // rows per destination block

  static constexpr std::size_t kHeaderBytes = 16;

  std::size_t meta_bytes() const;          // token + experts + weights, padded to 16
  std::size_t dispatch_row_bytes() const;  // meta + bf16 [H], padded to 16
  std::size_t dispatch_block_bytes() const;
  std::size_t dispatch_bytes() const { return dispatch_block_bytes() * ranks; }
  std::size_t combine_row_bytes() const;   // float [H], padded to 16
  std::size_t combine_block_bytes() const;
  std::size_t combine_bytes() const { return combine_block_bytes() * ranks; }

  // Offsets inside a dispatch record.
  static constexpr std::size_t token_offset() { return 0; }
  static constexpr std::size_t experts_offset() { return 4; }
  std::size_t weights_offset() const { return 4 + 4 * static_cast<std::size_t>(top_k); }
  std::size_t hidden_offset() const { return meta_bytes(); }

  // The same sizes as the kernels take them.
  kernels::ep::WireGeometry geometry() const;
};

// Throws UsageError for a non-positive dimension or capacity.
WireLayout make_wire_layout(int hidden, int top_k, int ranks, int capacity);

}  // namespace moe::ep
