#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

// Streaming kernels that measure the device's memory ceilings (probe `copy`), each with the
// plain CPU function it is checked against.
namespace moe::kernels {

// The word stored at index i of a pattern buffer: a hash, so no two regions look alike and a
// mis-indexed read cannot go unnoticed.
__host__ __device__ inline std::uint32_t pattern_word(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x >> 16);
}

// Launch shape for the streaming kernels: every SM, several blocks each, so enough 16-byte
// loads are in flight to cover HBM latency.
struct StreamLaunch {
  int blocks;
  int threads;
  static StreamLaunch for_device(int sm_count, int blocks_per_sm = 8) {
    return {sm_count * blocks_per_sm, 256};
  }
};

// Fills `words` 32-bit words with pattern_word(i, seed).
void fill_pattern(std::uint32_t* dst, std::size_t words, std::uint32_t seed, cudaStream_t stream);

// Reads every byte once with 16-byte loads and XORs all words into *xor_out (which it zeroes
// first). `bytes` must be a multiple of 16 and the buffer 16-byte aligned.
void read_stream(const void* src, std::size_t bytes, std::uint32_t* xor_out, StreamLaunch launch,
                 cudaStream_t stream);

// As read_stream, with loads cached at L2 at normal priority: reading a buffer twice the L2's
// size leaves the L2 holding only that buffer's lines, all clean (the L2 flush before a cold
// sample).
void read_through_l2(const void* src, std::size_t bytes, std::uint32_t* xor_out,
                     StreamLaunch launch, cudaStream_t stream);

// Copies with 16-byte loads and stores (grid-stride), the SM-side copy ceiling.
void copy_stream(void* dst, const void* src, std::size_t bytes, StreamLaunch launch,
                 cudaStream_t stream);

// Counts 32-bit words where a and b differ, into *mismatches (zeroed first).
void count_mismatches(const std::uint32_t* a, const std::uint32_t* b, std::size_t words,
                      unsigned long long* mismatches, cudaStream_t stream);

// CPU references.
std::uint32_t pattern_xor_reference(std::size_t words, std::uint32_t seed);

}  // namespace moe::kernels
