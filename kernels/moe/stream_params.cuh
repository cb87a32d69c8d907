#pragma once
// What the two roles of the streaming expert GEMM (stream_producer.cuh, stream_consumer.cuh)
// share: the kernel's parameters, the header the producer writes into each slot for the
// consumers, and the block's shared memory.
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/stream_plan.hpp"

namespace moe::kernels::stream {

struct Params {
  const void* const* weights;  // per expert (E routed, then S shared)
  const void* const* scales;   // int4: per expert
  const __nv_bfloat16* input;  // gate_up: x [m, H]; down: h [pairs, I] in sorted order
  int k_len;                   // H (gate_up) or I (down)
  int out_rows;                // h columns I (gate_up) or H (down)
  int tiles;                   // 16-row tiles of one expert's weights
  int paired;                  // gate_up: I, the first up row; down: 0
  int m, top_k, slots;         // tokens, routed slots, slots a token (top_k + shared)
  int experts, shared;
  const int* num_active;
  const int* active;  // routed ascending, then shared, then -1
  const int* offsets;
  const int* sorted_pairs;
  int token_table;  // gate_up: sorted positions whose token is kept in shared memory
  __nv_bfloat16* h_out;  // gate_up
  float* down_out;       // down
};

// What one ring item is. kStage: a stage of weights; kRoutedBegin (gate_up): the shared
// experts are done, the routed ones follow (the consumers wait for the route and read its
// pairs); kEnd: the block's last item.
enum ItemKind : int { kStage, kRoutedBegin, kEnd };

struct Header {
  int kind;
  int first_pair;  // the entry's first pair in sorted order
  int t0, tn;      // the pass's first token (of the entry) and its token count
  int tile;
  int segment;
  int last;    // the unit-pass's last segment: the epilogue follows
  int shared;  // a shared expert: its pairs are tokens 0 .. m - 1 in order
};

// The block's dynamic shared memory, in this order: the ring's slots (128-byte aligned, as the
// copies' destinations must be 16), the headers, the barriers, the warps' partial sums (two
// buffers: the epilogue of one unit-pass reads one while the next is written) and the
// sorted position -> token table of gate_up.
struct SmemLayout {
  int slot_bytes, slots, chunks, token_table;

  MOE_HD std::size_t headers() const { return static_cast<std::size_t>(slot_bytes) * slots; }
  MOE_HD std::size_t barriers() const { return headers() + sizeof(Header) * kMaxSlots; }
  MOE_HD std::size_t partials() const { return barriers() + 2 * sizeof(std::uint64_t) * kMaxSlots; }
  MOE_HD std::size_t tokens() const {
    return partials() + sizeof(float) * 2 * kConsumerWarps * chunks * 4 * 32;
  }
  MOE_HD std::size_t bytes() const { return tokens() + sizeof(int) * token_table; }
};

struct Smem {
  unsigned char* ring;
  Header* headers;
  std::uint64_t* full;
  std::uint64_t* empty;
  float* partials;  // [2][kConsumerWarps][chunks][4][32]
  int* tokens;

  __device__ Smem(unsigned char* base, const SmemLayout& l)
      : ring(base),
        headers(reinterpret_cast<Header*>(base + l.headers())),
        full(reinterpret_cast<std::uint64_t*>(base + l.barriers())),
        empty(full + kMaxSlots),
        partials(reinterpret_cast<float*>(base + l.partials())),
        tokens(reinterpret_cast<int*>(base + l.tokens())) {}
};

}  // namespace moe::kernels::stream
