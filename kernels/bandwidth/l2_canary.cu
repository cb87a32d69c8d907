#include "kernels/bandwidth/l2_canary.hpp"

#include "common/cuda_check.hpp"

namespace moe::kernels {

namespace {

constexpr std::uint32_t kWordsPerStride = kCanaryStrideBytes / sizeof(std::uint32_t);

// Line k of the chain visits line order(k): a fixed scramble (odd multiplier modulo a power of
// two is a permutation), so no stride a prefetcher could follow.
std::uint32_t order(int k) { return static_cast<std::uint32_t>((k * 13 + 7) % kCanaryLines); }

__global__ void touch_canary_kernel(const std::uint32_t* chain) {
  __shared__ volatile std::uint32_t sink[kCanaryLines];  // a volatile store keeps each load
  const int line = threadIdx.x;
  if (line >= kCanaryLines) return;
  sink[line] = __ldcg(chain + static_cast<std::size_t>(line) * kWordsPerStride);
}

__global__ void mark_flush_done_kernel(unsigned* counter) { atomicAdd(counter, 1u); }

__global__ void observe_canary_kernel(const std::uint32_t* chain, std::uint32_t first,
                                      const unsigned* counter, CanaryReading* out) {
  __shared__ volatile std::uint32_t waited[1];
  out->flushes_seen = *static_cast<const volatile unsigned*>(counter);
  for (int pass = 0; pass < 2; ++pass) {
    unsigned long long* cycles = pass == 0 ? out->cold_cycles : out->hot_cycles;
    std::uint32_t at = first;
    for (int i = 0; i < kCanaryLines; ++i) {
      const long long t0 = clock64();
      at = __ldcg(chain + at);  // cached in L2 only: an L1 hit would hide the L2's state
      waited[0] = at;           // the store waits for the load, so the clock below does too
      asm volatile("" ::: "memory");
      const long long t1 = clock64();
      cycles[i] = static_cast<unsigned long long>(t1 - t0);
    }
  }
}

}  // namespace

std::vector<std::uint32_t> canary_chain() {
  std::vector<std::uint32_t> words(kCanaryBytes / sizeof(std::uint32_t), 0);
  for (int k = 0; k < kCanaryLines; ++k)
    words[order(k) * kWordsPerStride] = order((k + 1) % kCanaryLines) * kWordsPerStride;
  return words;
}

std::uint32_t canary_first_word() { return order(0) * kWordsPerStride; }

void touch_canary(const std::uint32_t* chain, cudaStream_t stream) {
  touch_canary_kernel<<<1, kCanaryLines, 0, stream>>>(chain);
  MOE_CHECK_LAUNCH("touch_canary_kernel");
}

void mark_flush_done(unsigned* counter, cudaStream_t stream) {
  mark_flush_done_kernel<<<1, 1, 0, stream>>>(counter);
  MOE_CHECK_LAUNCH("mark_flush_done_kernel");
}

void observe_canary(const std::uint32_t* chain, const unsigned* counter, CanaryReading* out,
                    cudaStream_t stream) {
  observe_canary_kernel<<<1, 1, 0, stream>>>(chain, canary_first_word(), counter, out);
  MOE_CHECK_LAUNCH("observe_canary_kernel");
}

}  // namespace moe::kernels
