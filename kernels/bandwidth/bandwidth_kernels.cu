#include "kernels/bandwidth/bandwidth_kernels.hpp"

#include "common/cuda_check.hpp"

namespace moe::kernels {

namespace {

constexpr int kLoadsInFlight = 4;  // independent 16-byte loads per thread per iteration

__global__ void fill_pattern_kernel(std::uint32_t* dst, std::size_t words, std::uint32_t seed) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += stride)
    dst[i] = pattern_word(i, seed);
}

__device__ inline std::uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// kEvictFirst: streaming loads (evict-first), for the read ceiling; otherwise loads cached at
// L2 with normal priority, so the lines they bring in displace what the L2 held.
template <bool kEvictFirst>
__device__ inline uint4 load(const uint4* p) {
  if constexpr (kEvictFirst) return __ldcs(p);
  else return __ldcg(p);
}

template <bool kEvictFirst>
__global__ void read_kernel(const uint4* __restrict__ src, std::size_t vecs, std::uint32_t* xor_out) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  std::uint32_t acc = 0;
  // Issue all loads of an iteration before using any, so each thread keeps several in flight.
  for (; i + (kLoadsInFlight - 1) * stride < vecs; i += kLoadsInFlight * stride) {
    uint4 v[kLoadsInFlight];
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) v[k] = load<kEvictFirst>(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) acc ^= fold(v[k]);
  }
  for (; i < vecs; i += stride) acc ^= fold(load<kEvictFirst>(src + i));
  // The XOR is the kernel's checked output; it also keeps the loads from being optimised away.
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(xor_out, acc);
}

__global__ void copy_stream_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                   std::size_t vecs) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + (kLoadsInFlight - 1) * stride < vecs; i += kLoadsInFlight * stride) {
    uint4 v[kLoadsInFlight];
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) v[k] = __ldcs(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) __stcs(dst + i + k * stride, v[k]);
  }
  for (; i < vecs; i += stride) __stcs(dst + i, __ldcs(src + i));
}

__global__ void count_mismatches_kernel(const std::uint32_t* a, const std::uint32_t* b,
                                        std::size_t words, unsigned long long* mismatches) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  unsigned long long n = 0;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += stride)
    n += a[i] != b[i];
  if (n) atomicAdd(mismatches, n);
}

void require_vector_aligned(const void* p, std::size_t bytes, const char* what) {
  if (bytes % sizeof(uint4) != 0 || reinterpret_cast<std::uintptr_t>(p) % sizeof(uint4) != 0)
    throw Error(ExitCode::probe_error,
                std::string(what) + ": buffer must be 16-byte aligned and a multiple of 16 bytes");
}

}  // namespace

void fill_pattern(std::uint32_t* dst, std::size_t words, std::uint32_t seed, cudaStream_t stream) {
  fill_pattern_kernel<<<1024, 256, 0, stream>>>(dst, words, seed);
  MOE_CHECK_LAUNCH("fill_pattern_kernel");
}

namespace {
template <bool kEvictFirst>
void read_all(const void* src, std::size_t bytes, std::uint32_t* xor_out, StreamLaunch launch,
              cudaStream_t stream, const char* what) {
  require_vector_aligned(src, bytes, what);
  MOE_CUDA_CHECK(cudaMemsetAsync(xor_out, 0, sizeof(std::uint32_t), stream));
  read_kernel<kEvictFirst><<<launch.blocks, launch.threads, 0, stream>>>(
      static_cast<const uint4*>(src), bytes / sizeof(uint4), xor_out);
  MOE_CHECK_LAUNCH("read_kernel");
}
}  // namespace

void read_stream(const void* src, std::size_t bytes, std::uint32_t* xor_out, StreamLaunch launch,
                 cudaStream_t stream) {
  read_all<true>(src, bytes, xor_out, launch, stream, "read_stream");
}

void read_through_l2(const void* src, std::size_t bytes, std::uint32_t* xor_out,
                     StreamLaunch launch, cudaStream_t stream) {
  read_all<false>(src, bytes, xor_out, launch, stream, "read_through_l2");
}

void copy_stream(void* dst, const void* src, std::size_t bytes, StreamLaunch launch,
                 cudaStream_t stream) {
  require_vector_aligned(src, bytes, "copy_stream");
  require_vector_aligned(dst, bytes, "copy_stream");
  copy_stream_kernel<<<launch.blocks, launch.threads, 0, stream>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / sizeof(uint4));
  MOE_CHECK_LAUNCH("copy_stream_kernel");
}

void count_mismatches(const std::uint32_t* a, const std::uint32_t* b, std::size_t words,
                      unsigned long long* mismatches, cudaStream_t stream) {
  MOE_CUDA_CHECK(cudaMemsetAsync(mismatches, 0, sizeof(unsigned long long), stream));
  count_mismatches_kernel<<<1024, 256, 0, stream>>>(a, b, words, mismatches);
  MOE_CHECK_LAUNCH("count_mismatches_kernel");
}

std::uint32_t pattern_xor_reference(std::size_t words, std::uint32_t seed) {
  std::uint32_t acc = 0;
  for (std::size_t i = 0; i < words; ++i) acc ^= pattern_word(i, seed);
  return acc;
}

}  // namespace moe::kernels
