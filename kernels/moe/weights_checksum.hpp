#pragma once
// A checksum of every expert tensor of a layer, read through the same pointer tables the
// forward reads (so it sees exactly what the kernels would: device or mapped host memory).
// Residency transitions are verified with it: a rolled-back transition must leave every
// checksum unchanged. The mix is order-free (XOR of a hash of each word with its index), so
// the GPU may combine words in any order and still give the CPU's value.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/moe/moe_types.hpp"

namespace moe::kernels {

// Tensors of an expert in table order: gate_up, gate_up_scales, down, down_scales.
constexpr int kExpertTensors = 4;

// Hash of word `w` at word index `i` (splitmix64 finaliser): a word moved, changed or
// swapped with another changes the checksum.
__host__ __device__ inline std::uint64_t checksum_mix(std::uint32_t w, std::uint64_t i) {
  std::uint64_t x = (i << 32 | w) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The checksum of `bytes` (a multiple of 4) at `data`, on the host.
std::uint64_t checksum_host(const void* data, std::size_t bytes);

// out[e * kExpertTensors + t] = checksum of tensor t of expert e (0 for an absent tensor: bf16
// has no scales), for every e < E + S. `out` is device memory. Enqueue only.
void enqueue_expert_checksums(const MoeDims& dims, const ExpertTable& table, std::uint64_t* out,
                              cudaStream_t stream);

}  // namespace moe::kernels
