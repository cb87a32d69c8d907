#pragma once
// What the two roles of the streaming expert GEMM (stream_producer.cuh, stream_consumer.cuh)
// share: the kernel's parameters and the block's shared memory (its layout: stream_plan.hpp).
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
  __nv_bfloat16* h_out;  // gate_up
  float* down_out;       // down
};

struct Smem {
  unsigned char* ring;
  Header* headers;
  std::uint64_t* full;
  std::uint64_t* empty;

  __device__ Smem(unsigned char* base, const SmemLayout& l)
      : ring(base),
        headers(reinterpret_cast<Header*>(base + l.headers())),
        full(reinterpret_cast<std::uint64_t*>(base + l.barriers())),
        empty(full + kSlots) {}
};

}  // namespace moe::kernels::stream
