#pragma once
// A ring of shared-memory stages filled by the copy engine (cp.async.bulk, sm_90 and newer),
// the protocol of CUTLASS's and DeepGEMM's warp-specialised kernels written small. Each slot
// has two mbarriers:
//   full:  one arrival, the producer's, which also announces the bytes its copies will bring;
//          the phase completes when that arrival and every byte have landed.
//   empty: one arrival from each warp that reads the slot, made as soon as the warp has
//          copied its part to registers (before its math), so the next copy starts early.
// Item i uses slot i % slots and waits for phase (i / slots) & 1 of full; the producer waits
// for the opposite parity of empty, which a fresh barrier passes at once (every slot starts
// free). Below sm_90 every function traps: the stream family is refused there before launch.
#include <cstdint>

namespace moe::kernels::ring {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void init(std::uint64_t* bar, std::uint32_t arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
#else
  (void)bar, (void)arrivals;
  __trap();
#endif
}

// Makes the barriers' initialisation visible to the copy engine (the async proxy); a block
// barrier after it makes it visible to the block's threads.
__device__ __forceinline__ void fence_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __trap();
#endif
}

// Every slot's barriers, by one thread before the block's first barrier: full expects the
// producer's one arrival, empty one arrival from each of `readers` warps.
__device__ __forceinline__ void init_slots(std::uint64_t* full, std::uint64_t* empty, int slots, int readers) {
  for (int s = 0; s < slots; ++s) {
    init(&full[s], 1);
    init(&empty[s], static_cast<std::uint32_t>(readers));
  }
  fence_init();
}

// Waits until the phase of parity `parity` has completed (acquire: the bytes of the copies and
// what the arriving threads wrote before they arrived are visible after it).
__device__ __forceinline__ void wait(std::uint64_t* bar, std::uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
#else
  (void)bar, (void)parity;
  __trap();
#endif
}

// Whether the phase of parity `parity` has completed, without waiting (acquire, as wait): for a
// thread that polls several barriers at once.
__device__ __forceinline__ bool test_wait(std::uint64_t* bar, std::uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  std::uint32_t done = 0;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  (void)bar, (void)parity;
  __trap();
  return false;
#endif
}

__device__ __forceinline__ void arrive(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
#else
  (void)bar;
  __trap();
#endif
}

// The producer's arrival, announcing `bytes` of copies (before they are issued).
__device__ __forceinline__ void arrive_expect_bytes(std::uint64_t* bar, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar, (void)bytes;
  __trap();
#endif
}

// L2 policy for bytes read once (the weights): evicted first, so they do not push out the
// activations, h and the routing tables the layer reads again.
__device__ __forceinline__ std::uint64_t evict_first_policy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
#else
  __trap();
  return 0;
#endif
}

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared
// memory on the copy engine; their arrival counts against `bar`'s announced bytes.
__device__ __forceinline__ void copy(void* dst, const void* src, std::uint32_t bytes, std::uint64_t* bar,
                                    std::uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_address(dst)),
      "l"(src), "r"(bytes), "r"(smem_address(bar)), "l"(policy)
      : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar, (void)policy;
  __trap();
#endif
}

// Named barrier `id` (1..15; 0 is __syncthreads) among the first `threads` threads of the block.
__device__ __forceinline__ void sync_threads(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace moe::kernels::ring
