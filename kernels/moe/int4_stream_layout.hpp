#pragma once
// The int4 weight layout of the stream expert GEMM (Int4Layout::stream_tiles): the tiles,
// groups, vectors and scales of int4_mma_layout.hpp, with the 8 codes of every word
// interleaved: code k0 + 2 j in nibble j and code k0 + 2 j + 1 in nibble j + 4 (j = 0..3),
// where the row and mma-fragment layouts hold code k0 + j in nibble j.
//
// Why: one AND/OR turns nibble pair (j, j + 4) into two bf16 (int4_mma_fragments.hpp). Here
// that pair is two consecutive k, k0 + 2 j and k0 + 2 j + 1, the two bf16 of word j of the 8
// activations at k0 as they are loaded, so the mma's B operand needs no byte permute (in the
// mma-fragment layout, 16 PRMT a group and token chunk).
#include <cstddef>
#include <cstdint>

#include "kernels/moe/host_device.hpp"
#include "kernels/moe/int4_mma_layout.hpp"

namespace moe::kernels::int4_stream_layout {

// The nibble that holds code k0 + i (i = 0..7) of a word.
MOE_HD int nibble_of(int i) { return (i >> 1) + 4 * (i & 1); }

// A word of the row layout (code k0 + i in nibble i) interleaved, and back.
MOE_HD std::uint32_t interleave(std::uint32_t rows_word) {
  std::uint32_t w = 0;
  for (int i = 0; i < 8; ++i) w |= ((rows_word >> (4 * i)) & 0xFu) << (4 * nibble_of(i));
  return w;
}
MOE_HD std::uint32_t deinterleave(std::uint32_t word) {
  std::uint32_t w = 0;
  for (int i = 0; i < 8; ++i) w |= ((word >> (4 * nibble_of(i))) & 0xFu) << (4 * i);
  return w;
}

// Host conversions from and to the row layout (int4_format.hpp): the mma-fragment relay with
// every word interleaved.
inline void relay_to_stream(const std::uint32_t* rows_packed, const std::uint16_t* rows_scales, std::size_t rows,
                            int k_len, int paired, std::uint32_t* packed, std::uint16_t* scales) {
  int4_mma_layout::relay_to_mma(rows_packed, rows_scales, rows, k_len, paired, packed, scales);
  for (std::size_t i = 0; i < rows * (k_len / 8); ++i) packed[i] = interleave(packed[i]);
}

}  // namespace moe::kernels::int4_stream_layout
