#pragma once
// A canary for the L2 flush: a few lines touched just before the flush, then read again after
// it with each load timed, so the sampler observes whether the flush evicted them (an L2 hit
// takes about half the cycles of a read from HBM) instead of trusting that it ran.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace moe::kernels {

inline constexpr int kCanaryLines = 32;
// Lines this far apart: one 128-byte line each, all within one 2 MiB page (one TLB entry).
inline constexpr std::size_t kCanaryStrideBytes = 32 * 1024;
inline constexpr std::size_t kCanaryBytes = kCanaryLines * kCanaryStrideBytes;

// One observation, written by observe_canary.
struct CanaryReading {
  unsigned flushes_seen;  // the flush counter when the observation began
  unsigned pad;
  unsigned long long cold_cycles[kCanaryLines];  // each line's load after the flush
  unsigned long long hot_cycles[kCanaryLines];   // the same line read again straight after
};

// The chain the canary buffer holds (32-bit words): line k's first word names the word index
// of the next line in a scrambled order, so every load depends on the one before.
std::vector<std::uint32_t> canary_chain();
std::uint32_t canary_first_word();

// Loads every line once, untimed (the lines are in the L2 when the flush begins).
void touch_canary(const std::uint32_t* chain, cudaStream_t stream);
// Adds one to *counter once everything before it on `stream` finished (the flush's stream).
void mark_flush_done(unsigned* counter, cudaStream_t stream);
// Reads *counter, then times each line's load (cold pass) and again (hot pass) into *out.
void observe_canary(const std::uint32_t* chain, const unsigned* counter, CanaryReading* out,
                    cudaStream_t stream);

}  // namespace moe::kernels
