#include "adapters/cublas_per_expert/per_expert_kernels.hpp"

#include "adapters/cublas_per_expert/cuda_calls.hpp"
#include "adapters/cublas_per_expert/layer_support.hpp"

namespace cublas_adapter {

namespace {

constexpr int kRouteThreads = 256;

__global__ void route_kernel(RouteParams p) {
  extern __shared__ float logits[];  // [E]
  const int t = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const __nv_bfloat16* x = p.x + static_cast<std::size_t>(t) * p.hidden;
  for (int e = warp; e < p.experts; e += warps) {
    const __nv_bfloat16* w = p.router + static_cast<std::size_t>(e) * p.hidden;
    float acc = 0.f;
    for (int h = lane; h < p.hidden; h += 32) acc += __bfloat162float(x[h]) * __bfloat162float(w[h]);
    for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) logits[e] = acc + (p.router_bias ? p.router_bias[e] : 0.f);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  // Top-k: the largest value, the lower index on a tie (ascending scan, strict comparison).
  int chosen[kMaxTopK];
  for (int s = 0; s < p.top_k; ++s) {
    int best = -1;
    for (int e = 0; e < p.experts; ++e) {
      bool taken = false;
      for (int q = 0; q < s; ++q) taken = taken || chosen[q] == e;
      if (!taken && (best < 0 || logits[e] > logits[best])) best = e;
    }
    chosen[s] = best;
  }
  float score[kMaxTopK];
  float sum = 0.f;
  if (p.softmax) {
    float peak = logits[0];
    for (int e = 1; e < p.experts; ++e) peak = fmaxf(peak, logits[e]);
    float denom = 0.f;
    for (int e = 0; e < p.experts; ++e) denom += expf(logits[e] - peak);
    for (int s = 0; s < p.top_k; ++s) score[s] = expf(logits[chosen[s]] - peak) / denom;
  } else {
    for (int s = 0; s < p.top_k; ++s) score[s] = 1.f / (1.f + expf(-logits[chosen[s]]));
  }
  for (int s = 0; s < p.top_k; ++s) sum += score[s];
  for (int s = 0; s < p.top_k; ++s) {
    const float w = (p.renormalize ? score[s] / sum : score[s]) * p.routed_scaling;
    const int e = chosen[s];
    p.ids[t * p.top_k + s] = e;
    p.weights[t * p.top_k + s] = w;
    atomicOr(&p.routed[e / 32], 1u << (e % 32));
    atomicAdd(&p.counts[e], 1ull);
  }
}

__global__ void plan_kernel(PlanParams p) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int entry = 0, first = -1;
  for (int e = 0; e < p.experts; ++e) {
    const bool routed = (p.routed[e / 32] >> (e % 32)) & 1u;
    p.entry_of_expert[e] = routed && entry < p.routed_entries ? entry : -1;
    if (!routed || entry >= p.routed_entries) continue;
    if (first < 0) first = e;
    p.gate_up_batch[entry] = p.gate_up[e];
    p.down_batch[entry] = p.down[e];
    ++entry;
  }
  if (first < 0) first = 0;  // no token routed (never with M >= 1): any expert's weights will do
  for (; entry < p.routed_entries; ++entry) {
    p.gate_up_batch[entry] = p.gate_up[first];
    p.down_batch[entry] = p.down[first];
  }
  for (int s = 0; s < p.shared; ++s) {
    p.entry_of_expert[p.experts + s] = p.routed_entries + s;
    p.gate_up_batch[p.routed_entries + s] = p.gate_up[p.experts + s];
    p.down_batch[p.routed_entries + s] = p.down[p.experts + s];
  }
}

__global__ void swiglu_kernel(const float* gate_up, __nv_bfloat16* h, int entries, int tokens, int inter,
                              std::size_t stride_gate_up, std::size_t stride_h) {
  const std::size_t per_entry = static_cast<std::size_t>(tokens) * inter;
  const std::size_t total = per_entry * entries;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t j = i / per_entry, rest = i % per_entry;
    const std::size_t t = rest / inter, k = rest % inter;
    const float* row = gate_up + j * stride_gate_up + t * 2 * inter;
    const float g = row[k], u = row[inter + k];
    h[j * stride_h + t * inter + k] = __float2bfloat16(g / (1.f + expf(-g)) * u);
  }
}

__global__ void combine_kernel(CombineParams p) {
  const std::size_t total = static_cast<std::size_t>(p.tokens) * p.hidden;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t t = i / p.hidden, n = i % p.hidden;
    float acc = 0.f;
    for (int s = 0; s < p.top_k; ++s) {
      const int entry = p.entry_of_expert[p.ids[t * p.top_k + s]];
      acc += p.weights[t * p.top_k + s] * p.down_out[static_cast<std::size_t>(entry) * p.stride + t * p.hidden + n];
    }
    for (int s = 0; s < p.shared; ++s)
      acc += p.down_out[static_cast<std::size_t>(p.routed_entries + s) * p.stride + t * p.hidden + n];
    p.out[i] = __float2bfloat16(acc);
  }
}

unsigned grid_for(std::size_t elements) {
  const std::size_t blocks = (elements + 255) / 256;
  return static_cast<unsigned>(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

}  // namespace

void enqueue_route(const RouteParams& p, cudaStream_t stream) {
  route_kernel<<<p.tokens, kRouteThreads, static_cast<std::size_t>(p.experts) * sizeof(float), stream>>>(p);
  CUBLAS_ADAPTER_CUDA(cudaGetLastError());
}

void enqueue_plan(const PlanParams& p, cudaStream_t stream) {
  plan_kernel<<<1, 32, 0, stream>>>(p);
  CUBLAS_ADAPTER_CUDA(cudaGetLastError());
}

void enqueue_swiglu(const float* gate_up, __nv_bfloat16* h, int entries, int tokens, int intermediate,
                    std::size_t stride_gate_up, std::size_t stride_h, cudaStream_t stream) {
  const std::size_t elements = static_cast<std::size_t>(entries) * tokens * intermediate;
  swiglu_kernel<<<grid_for(elements), 256, 0, stream>>>(gate_up, h, entries, tokens, intermediate, stride_gate_up,
                                                         stride_h);
  CUBLAS_ADAPTER_CUDA(cudaGetLastError());
}

void enqueue_combine(const CombineParams& p, cudaStream_t stream) {
  combine_kernel<<<grid_for(static_cast<std::size_t>(p.tokens) * p.hidden), 256, 0, stream>>>(p);
  CUBLAS_ADAPTER_CUDA(cudaGetLastError());
}

}  // namespace cublas_adapter
