// A rank's experts on single rows (the received ones, and the shared experts on its own
// tokens): one block a row, h in shared memory, one warp an output element.
#include "common/cuda_check.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/launch.cuh"

namespace moe::kernels::ep {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Dot of a bf16 row of n (multiple of 8) elements in shared/global memory with a bf16 weight
// row, by one warp: lanes over 8-element words, a fixed reduction order.
__device__ float warp_dot_bf16(const uint4* a, const uint4* w, int words) {
  float acc = 0.0f;
  for (int i = threadIdx.x & 31; i < words; i += 32) acc = detail::dot8_bf16(a[i], w[i], acc);
  return detail::warp_sum(acc);
}

// partial[n] += weight * expert(x)[n] for one row; x_s is the row (bf16, shared), h_s scratch
// for h (bf16 [I], shared). Every thread must call it (it synchronises).
__device__ void accumulate_expert(const MoeDims& d, const void* gate_up, const void* down,
                                  const uint4* x_s, std::uint16_t* h_s, float weight,
                                  float* partial) {
  const int H = d.hidden, I = d.inter, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint4* wg = static_cast<const uint4*>(gate_up);
  for (int j = warp; j < I; j += kWarps) {
    const float g = warp_dot_bf16(x_s, wg + static_cast<std::size_t>(j) * (H / 8), H / 8);
    const float u = warp_dot_bf16(x_s, wg + static_cast<std::size_t>(I + j) * (H / 8), H / 8);
    if (lane == 0) h_s[j] = detail::to_bf16_bits(detail::silu(g) * u);
  }
  __syncthreads();
  const uint4* wd = static_cast<const uint4*>(down);
  const uint4* h4 = reinterpret_cast<const uint4*>(h_s);
  for (int n = warp; n < H; n += kWarps) {
    const float y = warp_dot_bf16(h4, wd + static_cast<std::size_t>(n) * (I / 8), I / 8);
    if (lane == 0) partial[n] += weight * y;  // one writer per element, slots in order
  }
  __syncthreads();
}

// Block (r, s): record r of receive block s.
__global__ void expert_rows_kernel(ExpertRowsArgs a) {
  extern __shared__ uint4 smem[];
  const int r = blockIdx.x, s = blockIdx.y, K = a.wire.top_k, H = a.dims.hidden;
  const unsigned char* block = a.recv + a.wire.dispatch_block_bytes * s;
  const int count = a.stale_counts ? a.stale_counts[s] : reinterpret_cast<const int*>(block)[0];
  if (count < 0 || count > a.wire.capacity) {
    if (threadIdx.x == 0 && r == 0) atomicOr(a.status, kBadCount);
    return;
  }
  if (r >= count) return;
  const unsigned char* rec = block + a.wire.header_bytes + a.wire.dispatch_row_bytes * r;
  float* partial = reinterpret_cast<float*>(a.combine_send + a.wire.combine_block_bytes * s +
                                            a.wire.header_bytes + a.wire.combine_row_bytes * r);
  uint4* x_s = smem;
  std::uint16_t* h_s = reinterpret_cast<std::uint16_t*>(smem + H / 8);
  const uint4* x = reinterpret_cast<const uint4*>(rec + a.wire.meta_bytes);
  for (int i = threadIdx.x; i < H / 8; i += kThreads) x_s[i] = x[i];
  for (int n = threadIdx.x; n < H; n += kThreads) partial[n] = 0.0f;
  __syncthreads();
  const int* experts = reinterpret_cast<const int*>(rec + 4);
  const float* weights = reinterpret_cast<const float*>(rec + 4 + 4 * K);
  for (int k = 0; k < K; ++k) {
    const int e = experts[k];
    if (e < 0) continue;
    if (e >= a.local_experts) {
      if (threadIdx.x == 0) atomicOr(a.status, kBadExpert);
      continue;
    }
    accumulate_expert(a.dims, a.gate_up[e], a.down[e], x_s, h_s, weights[k], partial);
  }
}

// Block t: the shared experts on own token t, weight 1, in shared-expert order.
__global__ void shared_rows_kernel(SharedRowsArgs a) {
  extern __shared__ uint4 smem[];
  const int t = blockIdx.x, H = a.dims.hidden;
  uint4* x_s = smem;
  std::uint16_t* h_s = reinterpret_cast<std::uint16_t*>(smem + H / 8);
  const uint4* x = reinterpret_cast<const uint4*>(a.x + static_cast<std::size_t>(t) * H);
  float* out = a.out + static_cast<std::size_t>(t) * H;
  for (int i = threadIdx.x; i < H / 8; i += kThreads) x_s[i] = x[i];
  for (int n = threadIdx.x; n < H; n += kThreads) out[n] = 0.0f;
  __syncthreads();
  for (int s = 0; s < a.dims.shared; ++s)
    accumulate_expert(a.dims, a.gate_up[s], a.down[s], x_s, h_s, 1.0f, out);
}

std::size_t smem_bytes(const MoeDims& d) {
  return static_cast<std::size_t>(d.hidden) * 2 + static_cast<std::size_t>(d.inter) * 2;
}

void check_dims(const MoeDims& d) {
  if (d.format != WeightFormat::bf16)
    throw Error(ExitCode::usage, "expert-parallel expert rows: only bf16 weights are supported");
  if (d.hidden % 8 != 0 || d.inter % 8 != 0)
    throw Error(ExitCode::usage, "expert-parallel expert rows: hidden and inter must be multiples of 8");
}

template <class Kernel>
void allow_smem(Kernel k, std::size_t bytes) {
  if (bytes > 48 * 1024)
    MOE_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

}  // namespace

void preload_expert_rows_kernels() {
  detail::load_kernel(expert_rows_kernel, "expert_rows_kernel");
  detail::load_kernel(shared_rows_kernel, "shared_rows_kernel");
}

void enqueue_expert_rows(const ExpertRowsArgs& a, cudaStream_t stream) {
  check_dims(a.dims);
  const std::size_t smem = smem_bytes(a.dims);
  allow_smem(expert_rows_kernel, smem);
  expert_rows_kernel<<<dim3(a.wire.capacity, a.wire.ranks), kThreads, smem, stream>>>(a);
  MOE_CHECK_LAUNCH("expert_rows_kernel");
}

void enqueue_shared_rows(const SharedRowsArgs& a, cudaStream_t stream) {
  check_dims(a.dims);
  if (a.m < 1 || a.dims.shared < 1) return;
  const std::size_t smem = smem_bytes(a.dims);
  allow_smem(shared_rows_kernel, smem);
  shared_rows_kernel<<<a.m, kThreads, smem, stream>>>(a);
  MOE_CHECK_LAUNCH("shared_rows_kernel");
}

}  // namespace moe::kernels::ep
