#pragma once
// The symmetric window of the LSA exchange (engine/ep/nccl/lsa_exchange.hpp). Every rank
// registers one window of the same size; it holds the rank's two receive buffers, laid out as
// the NCCL collectives' are (engine/ep/wire_layout.hpp: block s came from rank s), and a status
// word only that rank writes:
//   [dispatch_offset, + ranks * dispatch block)  dispatch receive blocks, block s from rank s
//   [combine_offset,  + ranks * combine block)   combine receive blocks, block d from rank d
//   [status_offset,   + 16)                      this rank's exchange status (LsaStatusBits)
// The window is symmetric, so rank s writes its block into peer d's window at the same offset
// on every peer: dispatch_block_offset(s). Regions start on `alignment`-byte boundaries and the
// size is a multiple of it. The host computes this once; the kernels get the offsets.
#include <cstddef>

#include "engine/ep/wire_layout.hpp"

namespace moe::ep {

// Bits of the status word (LsaWindowLayout::status_offset); zero while every exchange is whole.
enum LsaStatusBits : unsigned {
  kLsaEntryTimeout = 1u,  // a peer never reached the exchange
  kLsaExitTimeout = 2u,   // a peer never finished its stores
};

struct LsaWindowLayout {
  int ranks = 0;
  std::size_t dispatch_block_bytes = 0;
  std::size_t combine_block_bytes = 0;
  std::size_t dispatch_offset = 0;
  std::size_t combine_offset = 0;
  std::size_t status_offset = 0;
  std::size_t window_bytes = 0;

  static constexpr std::size_t kStatusBytes = 16;

  // Where the block that rank `source` sends lands in its destination's window.
  std::size_t dispatch_block_offset(int source) const;
  std::size_t combine_block_offset(int source) const;
};

// `alignment`: a power of two, at least 16 (NCCL asks 4096 of a window's base; the regions
// follow it so every block starts on a 16-byte boundary). UsageError otherwise.
LsaWindowLayout make_lsa_window_layout(const WireLayout& wire, std::size_t alignment = 4096);

// Bytes of a block that carry meaning: its header and `count` records of `row_bytes`. A count
// outside [0, capacity] (a corrupt header) moves the whole block, so the receiver's own check
// of the header sees what was sent. The LSA exchange copies only these bytes.
constexpr std::size_t meaningful_block_bytes(std::size_t header_bytes, std::size_t row_bytes,
                                             int count, int capacity) {
  const int rows = count < 0 || count > capacity ? capacity : count;
  return header_bytes + row_bytes * static_cast<std::size_t>(rows);
}

}  // namespace moe::ep
