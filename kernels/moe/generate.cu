#include "kernels/moe/generate.hpp"

#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/bf16_stream_layout.hpp"
#include "kernels/moe/generator.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/int4_stream_layout.hpp"

namespace moe::kernels {

namespace {

constexpr int kGenThreads = 256;

int gen_blocks(std::size_t items) {
  const std::size_t b = (items + kGenThreads - 1) / kGenThreads;
  return static_cast<int>(b < 65535 * 8 ? (b ? b : 1) : 65535 * 8);  // grid-stride beyond
}

// Each thread writes 8 bf16 (one 16-byte store) per step.
__global__ void generate_bf16_kernel(uint4* dst, std::size_t vecs, std::uint64_t key,
                                     float scale) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t v = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; v < vecs; v += stride) {
    std::uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t lo = generated_bf16_bits(key, v * 8 + 2 * j, scale);
      const std::uint32_t hi = generated_bf16_bits(key, v * 8 + 2 * j + 1, scale);
      w[j] = lo | (hi << 16);
    }
    dst[v] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// The stream family's stage tiles (bf16_stream_layout.hpp): the same values, each vector placed
// by the layout's inverse map. paired: gate_up's first up row (I), 0 for down.
__global__ void generate_bf16_tiles_kernel(uint4* dst, std::size_t vecs, int k_len, int paired, std::uint64_t key,
                                           float scale) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t v = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; v < vecs; v += stride) {
    const bf16_stream_layout::VectorSource src = bf16_stream_layout::vector_source(k_len, v, paired);
    const std::size_t first = src.row * k_len + src.k0;
    std::uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      w[j] = generated_bf16_bits(key, first + 2 * j, scale) | (generated_bf16_bits(key, first + 2 * j + 1, scale) << 16);
    dst[v] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// One packed word (8 codes) per thread step.
__global__ void generate_int4_kernel(std::uint32_t* packed, std::size_t words, int k_len,
                                     std::uint64_t key) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const int words_per_row = k_len / 8;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += stride) {
    const std::size_t row = i / words_per_row;
    const int k0 = static_cast<int>(i % words_per_row) * 8;
    std::uint32_t w = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) w |= int4_nibble(generated_q4(key, row, k_len, k0 + j)) << (4 * j);
    packed[i] = w;
  }
}

__global__ void generate_scales_kernel(std::uint16_t* scales, std::size_t rows, int k_len,
                                       std::uint64_t key, float base) {
  const int groups = int4_groups(k_len);
  const std::size_t n = rows * groups;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    scales[i] = generated_scale(key, i / groups, k_len, static_cast<int>(i % groups), base);
}

// The mma fragment layout (int4_mma_layout.hpp) and the stream tiles (int4_stream_layout.hpp,
// interleave): the same codes and scales, each word and scale placed by the layout's inverse
// maps. paired: gate_up's first up row (I), 0 for down.
__global__ void generate_int4_mma_kernel(std::uint32_t* packed, std::size_t words, int k_len, int paired,
                                         std::uint64_t key, bool interleave) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += stride) {
    const int4_mma_layout::WordSource src = int4_mma_layout::word_source(k_len, i, paired);
    std::uint32_t w = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int nibble = interleave ? int4_stream_layout::nibble_of(j) : j;
      w |= int4_nibble(generated_q4(key, src.row, k_len, src.k0 + j)) << (4 * nibble);
    }
    packed[i] = w;
  }
}

__global__ void generate_scales_mma_kernel(std::uint16_t* scales, std::size_t n, int k_len, int paired,
                                           std::uint64_t key, float base) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int4_mma_layout::ScaleSource src = int4_mma_layout::scale_source(k_len, i, paired);
    scales[i] = generated_scale(key, src.row, k_len, src.group, base);
  }
}

void launch_bf16(void* dst, std::size_t elems, std::uint64_t key, float scale,
                 cudaStream_t stream) {
  if (elems % 8 != 0 || reinterpret_cast<std::uintptr_t>(dst) % 16 != 0)
    throw Error(ExitCode::probe_error,
                "generate: bf16 tensor of " + std::to_string(elems) +
                    " elements must be a multiple of 8 elements and 16-byte aligned");
  const std::size_t vecs = elems / 8;
  generate_bf16_kernel<<<gen_blocks(vecs), kGenThreads, 0, stream>>>(static_cast<uint4*>(dst),
                                                                     vecs, key, scale);
  MOE_CHECK_LAUNCH("generate_bf16_kernel");
}

}  // namespace

TensorShape expert_tensor_shape(const MoeDims& d, TensorKind kind) {
  if (kind == TensorKind::gate_up) return {static_cast<std::size_t>(2) * d.inter, d.hidden};
  if (kind == TensorKind::down) return {static_cast<std::size_t>(d.hidden), d.inter};
  throw Error(ExitCode::probe_error, "expert_tensor_shape: kind must be gate_up or down");
}

std::size_t expert_weight_bytes(const MoeDims& d, TensorKind kind) {
  const TensorShape s = expert_tensor_shape(d, kind);
  return d.format == WeightFormat::bf16 ? s.rows * s.k * 2 : int4_packed_bytes(s.rows, s.k);
}

std::size_t expert_scale_bytes(const MoeDims& d, TensorKind kind) {
  const TensorShape s = expert_tensor_shape(d, kind);
  return d.format == WeightFormat::bf16 ? 0 : int4_scale_bytes(s.rows, s.k);
}

std::size_t router_bytes(const MoeDims& d) {
  return static_cast<std::size_t>(d.router_rows()) * d.hidden * 2;
}
std::size_t input_bytes(const MoeDims& d, int m) { return static_cast<std::size_t>(m) * d.hidden * 2; }

void generate_expert_tensor(const MoeDims& d, TensorKind kind, std::uint64_t seed, int expert,
                            void* weights, void* scales, cudaStream_t stream, Int4Layout layout,
                            Bf16Layout bf16_layout) {
  const TensorShape s = expert_tensor_shape(d, kind);
  if (expert < 0 || expert >= d.total_experts())
    throw Error(ExitCode::probe_error, "generate_expert_tensor: expert " + std::to_string(expert) +
                                           " outside [0, " + std::to_string(d.total_experts()) + ")");
  const std::uint64_t key = stream_key(seed, kind, static_cast<std::uint32_t>(expert));
  if (d.format == WeightFormat::bf16) {
    if (scales != nullptr)
      throw Error(ExitCode::probe_error, "generate_expert_tensor: bf16 tensors have no scales");
    if (bf16_layout == Bf16Layout::rows) return launch_bf16(weights, s.rows * s.k, key, inv_sqrt(s.k), stream);
    if (s.rows % bf16_stream_layout::kTileRows != 0 || s.k % bf16_stream_layout::kBlockK != 0 ||
        reinterpret_cast<std::uintptr_t>(weights) % 16 != 0)
      throw Error(ExitCode::probe_error, "generate_expert_tensor: the bf16 stream tiles need rows (" +
                                             std::to_string(s.rows) + ") a multiple of 16, K (" + std::to_string(s.k) +
                                             ") a multiple of 32 and a 16-byte aligned tensor");
    const std::size_t vecs = s.rows * s.k / bf16_stream_layout::kVectorElems;
    generate_bf16_tiles_kernel<<<gen_blocks(vecs), kGenThreads, 0, stream>>>(
        static_cast<uint4*>(weights), vecs, s.k, kind == TensorKind::gate_up ? d.inter : 0, key, inv_sqrt(s.k));
    MOE_CHECK_LAUNCH("generate_bf16_tiles_kernel");
    return;
  }
  if (s.k % kInt4KMultiple != 0)
    throw Error(ExitCode::probe_error, "generate_expert_tensor: int4 needs K (" +
                                           std::to_string(s.k) + ") a multiple of 32");
  if (scales == nullptr)
    throw Error(ExitCode::probe_error, "generate_expert_tensor: int4 tensors need a scale buffer");
  const std::size_t words = s.rows * (s.k / 8);
  const std::uint64_t skey = stream_key(seed, scale_kind_of(kind), static_cast<std::uint32_t>(expert));
  if (layout == Int4Layout::mma_fragments || layout == Int4Layout::stream_tiles) {
    if (s.rows % int4_mma_layout::kTileRows != 0)
      throw Error(ExitCode::probe_error, "generate_expert_tensor: the int4 " + std::string(to_string(layout)) + " layout needs rows (" +
                                             std::to_string(s.rows) + ") a multiple of 16");
    const int paired = kind == TensorKind::gate_up ? d.inter : 0;
    generate_int4_mma_kernel<<<gen_blocks(words), kGenThreads, 0, stream>>>(static_cast<std::uint32_t*>(weights),
                                                                            words, s.k, paired, key,
                                                                            layout == Int4Layout::stream_tiles);
    MOE_CHECK_LAUNCH("generate_int4_mma_kernel");
    const std::size_t n = s.rows * int4_groups(s.k);
    generate_scales_mma_kernel<<<gen_blocks(n), kGenThreads, 0, stream>>>(static_cast<std::uint16_t*>(scales), n,
                                                                          s.k, paired, skey, int4_scale_base(s.k));
    MOE_CHECK_LAUNCH("generate_scales_mma_kernel");
    return;
  }
  generate_int4_kernel<<<gen_blocks(words), kGenThreads, 0, stream>>>(
      static_cast<std::uint32_t*>(weights), words, s.k, key);
  MOE_CHECK_LAUNCH("generate_int4_kernel");
  generate_scales_kernel<<<gen_blocks(s.rows * int4_groups(s.k)), kGenThreads, 0, stream>>>(
      static_cast<std::uint16_t*>(scales), s.rows, s.k, skey, int4_scale_base(s.k));
  MOE_CHECK_LAUNCH("generate_scales_kernel");
}

void generate_router(const MoeDims& d, std::uint64_t seed, __nv_bfloat16* router,
                     cudaStream_t stream) {
  launch_bf16(router, static_cast<std::size_t>(d.router_rows()) * d.hidden,
              stream_key(seed, TensorKind::router, 0), inv_sqrt(d.hidden), stream);
}

void generate_input(const MoeDims& d, int m, std::uint64_t seed, __nv_bfloat16* x,
                    cudaStream_t stream) {
  launch_bf16(x, static_cast<std::size_t>(m) * d.hidden, stream_key(seed, TensorKind::input, 0),
              1.0f, stream);
}

void expert_row_host(const MoeDims& d, TensorKind kind, std::uint64_t seed, int expert,
                     std::size_t row, float* out) {
  const TensorShape s = expert_tensor_shape(d, kind);
  const std::uint64_t key = stream_key(seed, kind, static_cast<std::uint32_t>(expert));
  if (d.format == WeightFormat::bf16) {
    const float scale = inv_sqrt(s.k);
    for (int k = 0; k < s.k; ++k)
      out[k] = bf16_bits_to_float(generated_bf16_bits(key, row * s.k + k, scale));
    return;
  }
  const std::uint64_t skey = stream_key(seed, scale_kind_of(kind), static_cast<std::uint32_t>(expert));
  const float base = int4_scale_base(s.k);
  for (int g = 0; g < int4_groups(s.k); ++g) {
    const float scale = bf16_bits_to_float(generated_scale(skey, row, s.k, g, base));
    const int end = (g + 1) * kInt4Group < s.k ? (g + 1) * kInt4Group : s.k;
    for (int k = g * kInt4Group; k < end; ++k)
      out[k] = static_cast<float>(generated_q4(key, row, s.k, k)) * scale;
  }
}

void router_row_host(const MoeDims& d, std::uint64_t seed, int e, float* out) {
  const std::uint64_t key = stream_key(seed, TensorKind::router, 0);
  const float scale = inv_sqrt(d.hidden);
  for (int h = 0; h < d.hidden; ++h)
    out[h] = bf16_bits_to_float(
        generated_bf16_bits(key, static_cast<std::uint64_t>(e) * d.hidden + h, scale));
}

std::vector<float> selection_bias_host(const MoeDims& d, std::uint64_t seed) {
  std::vector<float> bias;
  if (!d.selection_bias()) return bias;
  const std::uint64_t key = stream_key(seed, TensorKind::score_correction_bias, 0);
  bias.resize(static_cast<std::size_t>(d.experts));
  for (int e = 0; e < d.experts; ++e) bias[e] = hash_to_pm1(element_hash(key, e)) * (1.0f / 16.0f);
  return bias;
}

void input_row_host(const MoeDims& d, std::uint64_t seed, int t, float* out) {
  const std::uint64_t key = stream_key(seed, TensorKind::input, 0);
  for (int h = 0; h < d.hidden; ++h)
    out[h] = bf16_bits_to_float(
        generated_bf16_bits(key, static_cast<std::uint64_t>(t) * d.hidden + h, 1.0f));
}

}  // namespace moe::kernels
