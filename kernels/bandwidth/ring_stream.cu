#include "kernels/bandwidth/ring_stream.hpp"

#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/mma_sync.cuh"
#include "kernels/moe/stage_ring.cuh"
#include "kernels/moe/stream_plan.hpp"

namespace moe::kernels {

namespace {

constexpr int kConsumerWarps = stream::kConsumerWarps;
constexpr int kThreads = stream::kThreads;
constexpr int kLoadBytes = 32 * 16;                  // one 16-byte load of every lane of a warp
constexpr int kMaxVecs = kMaxRingStage / kLoadBytes;  // loads a lane a stage, at most
constexpr int kMaxSlots = kConsumerWarps * kMaxRingSlots;

// Dynamic shared memory: the slots (warp w's ring: slots w * r.slots ..), then each slot's
// byte count (-1: the ring's end), then barriers.
struct RingSmem {
  unsigned char* slots;
  int* sizes;
  std::uint64_t* full;
  std::uint64_t* empty;
  __device__ RingSmem(unsigned char* base, const RingShape& r)
      : slots(base),
        sizes(reinterpret_cast<int*>(base + static_cast<std::size_t>(r.stage_bytes) * kConsumerWarps * r.slots)),
        full(reinterpret_cast<std::uint64_t*>(sizes + kMaxSlots)),
        empty(full + kMaxSlots) {}
};
__host__ __device__ std::size_t ring_smem(const RingShape& r) {
  return static_cast<std::size_t>(r.stage_bytes) * kConsumerWarps * r.slots + sizeof(int) * kMaxSlots +
         2 * sizeof(std::uint64_t) * kMaxSlots;
}

template <RingMath kMath>
__global__ void __launch_bounds__(kThreads, 1)
    ring_stream_kernel(const unsigned char* src, std::size_t bytes, RingShape ring, std::uint32_t* xor_out, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  RingSmem sm(smem, ring);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) ring::init_slots(sm.full, sm.empty, kConsumerWarps * ring.slots, 1);
  __syncthreads();
  const long long chunks = static_cast<long long>((bytes + ring.stage_bytes - 1) / ring.stage_bytes);
  const long long lo = stream::share_begin(chunks, blockIdx.x, gridDim.x);
  const long long hi = stream::share_begin(chunks, blockIdx.x + 1, gridDim.x);
  if (warp == kConsumerWarps) {  // the producer: stage c of the share to warp c % 8, item c / 8 of its ring
    if (lane == 0) {
      const std::uint64_t policy = ring::evict_first_policy();
      for (long long c = 0; c < hi - lo + kConsumerWarps; ++c) {  // the last 8: each ring's end marker
        const int w = static_cast<int>(c % kConsumerWarps), item = static_cast<int>(c / kConsumerWarps);
        const int slot = w * ring.slots + item % ring.slots;
        ring::wait(&sm.empty[slot], ((item / ring.slots) & 1) ^ 1);
        const std::size_t at = static_cast<std::size_t>(lo + c) * ring.stage_bytes;
        const int size = c < hi - lo ? static_cast<int>(min(static_cast<std::size_t>(ring.stage_bytes), bytes - at)) : -1;
        sm.sizes[slot] = size;
        if (size < 0) {
          ring::arrive(&sm.full[slot]);
        } else {
          ring::arrive_expect_bytes(&sm.full[slot], static_cast<std::uint32_t>(size));
          ring::copy(sm.slots + static_cast<std::size_t>(slot) * ring.stage_bytes, src + at, static_cast<std::uint32_t>(size),
                     &sm.full[slot], policy);
        }
      }
    }
    return;
  }
  std::uint32_t x = 0;
  float acc[4] = {0.f, 0.f, 0.f, 0.f}, acc_odd[4] = {0.f, 0.f, 0.f, 0.f};
  // Constant activations (bf16 1.0 and 0.5): the math's cost, not its values, is measured.
  const expert_mma::BFragment b{{0x3F803F80u, 0x3F003F00u}};
  for (int item = 0;; ++item) {
    const int slot = warp * ring.slots + item % ring.slots;
    ring::wait(&sm.full[slot], (item / ring.slots) & 1);
    const int size = sm.sizes[slot];
    if (size < 0) break;
    const uint4* v = reinterpret_cast<const uint4*>(sm.slots + static_cast<std::size_t>(slot) * ring.stage_bytes);
    uint4 r[kMaxVecs];
#pragma unroll
    for (int i = 0; i < kMaxVecs; ++i) {
      const int at = i * 32 + lane;  // the warp reads 512 contiguous bytes a load
      r[i] = 16 * at < size ? v[at] : make_uint4(0u, 0u, 0u, 0u);
    }
    __syncwarp();
    if (lane == 0) ring::arrive(&sm.empty[slot]);
#pragma unroll
    for (int i = 0; i < kMaxVecs; ++i) x ^= r[i].x ^ r[i].y ^ r[i].z ^ r[i].w;
    if constexpr (kMath != RingMath::none) {
#pragma unroll
      for (int i = 0; i + 1 < kMaxVecs; i += 2) {
        if (i * kLoadBytes >= size) break;
        std::uint32_t rn[4], rn8[4];
        copy_words(rn, r[i]);
        copy_words(rn8, r[i + 1]);
        if constexpr (kMath == RingMath::bf16) {
          mma_16816(acc, expert_mma::bf16_a(rn, rn8, 0), b);
          mma_16816(acc, expert_mma::bf16_a(rn, rn8, 1), b);
        } else {
          // As the stream GEMM's group: even and odd steps in two accumulators.
#pragma unroll
          for (int s = 0; s < 8; ++s) mma_16816(s & 1 ? acc_odd : acc, expert_mma::int4_a(rn, rn8, s), b);
        }
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, o);
  if (lane == 0) atomicXor(xor_out, x);
  if (threadIdx.x == 0) sink[blockIdx.x] = acc[0] + acc[1] + acc[2] + acc[3] + acc_odd[0] + acc_odd[1] + acc_odd[2] + acc_odd[3];
#else
  (void)src, (void)bytes, (void)ring, (void)xor_out, (void)sink;
  __trap();
#endif
}

// Lets the kernel use the largest ring's shared memory, once per device: the launch itself
// then enqueues nothing else, and may be captured into a graph.
template <RingMath kMath>
void configure(const void* kernel) {
  static bool configured[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && configured[dev]) return;
  const std::size_t most = ring_smem(RingShape{kMaxRingStage, kMaxRingSlots});
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(most)));
  if (dev < 64) configured[dev] = true;
}

template <RingMath kMath>
void launch(const void* src, std::size_t bytes, RingShape ring, std::uint32_t* xor_out, float* sink, cudaStream_t stream) {
  const auto kernel = ring_stream_kernel<kMath>;
  configure<kMath>(reinterpret_cast<const void*>(kernel));
  const std::size_t smem = ring_smem(ring);
  kernel<<<ring_stream_blocks(), kThreads, smem, stream>>>(static_cast<const unsigned char*>(src), bytes, ring, xor_out,
                                                           sink);
  MOE_CHECK_LAUNCH("ring_stream_kernel");
}

}  // namespace

const char* to_string(RingMath m) {
  switch (m) {
    case RingMath::bf16: return "bf16";
    case RingMath::int4: return "int4";
    case RingMath::none: break;
  }
  return "none";
}

bool ring_stream_supported() { return current_device_sm() >= 90; }

int ring_stream_blocks() { return current_device_multiprocessors(); }

void ring_stream(const void* src, std::size_t bytes, RingShape ring, RingMath math, std::uint32_t* xor_out,
                 float* sink, cudaStream_t stream) {
  if (!ring_stream_supported())
    throw Error(ExitCode::probe_error, "ring_stream needs bulk copies, sm_90 or newer; this device is sm_" +
                                           std::to_string(current_device_sm()));
  if (ring.stage_bytes <= 0 || ring.stage_bytes % kLoadBytes != 0 || ring.stage_bytes > kMaxRingStage ||
      ring.slots < 2 || ring.slots > kMaxRingSlots)
    throw Error(ExitCode::probe_error, "ring_stream: stage of " + std::to_string(ring.stage_bytes) + " bytes and " +
                                           std::to_string(ring.slots) + " slots a warp; a stage must be a multiple of " +
                                           std::to_string(kLoadBytes) + " up to " + std::to_string(kMaxRingStage) +
                                           ", slots 2.." + std::to_string(kMaxRingSlots));
  if (bytes % 16 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0)
    throw Error(ExitCode::probe_error, "ring_stream: the buffer must be 16-byte aligned and a multiple of 16 bytes");
  switch (math) {
    case RingMath::none: return launch<RingMath::none>(src, bytes, ring, xor_out, sink, stream);
    case RingMath::bf16: return launch<RingMath::bf16>(src, bytes, ring, xor_out, sink, stream);
    case RingMath::int4: return launch<RingMath::int4>(src, bytes, ring, xor_out, sink, stream);
  }
}

}  // namespace moe::kernels
