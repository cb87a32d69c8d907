// Stages 2 and 3 for large M: grouped GEMM on bf16 tensor cores (wmma 16x16x16, fp32
// accumulate), sm_80 and newer. One block computes a 64 (pairs of one expert) x 64 (output
// columns) tile; the tile list (expert, first pair) was built on the device by the route stage,
// so the grid covers the worst-case tile count and blocks past num_tiles exit.
// gate_up tiles take 32 gate rows and the 32 matching up rows, so SwiGLU happens in the
// epilogue. int4 weights are dequantised (q * scale, rounded to bf16) into shared memory.
// The next K tile is fetched into registers while the current one is multiplied.
#include <mma.h>

#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_format.hpp"

namespace moe::kernels {

namespace {

constexpr int kBM = kTensorCoreTileRows;  // 64 pairs
constexpr int kBN = 64;
constexpr int kBK = 64;
constexpr int kLds = kBK + 8;  // padded row stride (elements) against bank conflicts
constexpr int kThreads = 128;  // 4 warps, 2 x 2, each 32 x 32
constexpr int kLdc = kBN + 4;

struct TcParams {
  const void* const* weights;
  const void* const* scales;
  const __nv_bfloat16* input;  // gate_up: x [m, H]; down: h [pairs, I]
  int k_len, out_rows, slots;
  const int* offsets;
  const int* num_tiles;
  const int2* tiles;
  const int* sorted_pairs;
  __nv_bfloat16* h_out;
  float* down_out;
};

struct __align__(128) TcSmem {
  union {
    struct {
      std::uint16_t a[2][kBM][kLds];
      std::uint16_t b[2][kBN][kLds];
    } in;
    float c[kBM][kLdc];
  };
};

template <WeightFormat F, bool kGateUp>
__global__ void __launch_bounds__(kThreads) tc_expert_gemm_kernel(TcParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  __shared__ __align__(128) TcSmem sm;
  const int tile = blockIdx.x;
  if (tile >= *p.num_tiles) return;
  const int2 te = p.tiles[tile];
  const int e = te.x, pstart = te.y;
  const int rows_valid = min(kBM, p.offsets[e + 1] - pstart);
  const int K = p.k_len;
  // Output columns of this block: gate_up -> 32 columns j0.. (gate rows j0.., up rows I + j0..).
  const int col0 = blockIdx.y * (kGateUp ? kBN / 2 : kBN);
  const int tid = threadIdx.x, warp = tid >> 5;

  // A rows (activations) this thread loads: 4 x (row, 16-byte chunk) per K tile.
  const std::uint16_t* a_src[4];
  int a_row[4], a_chunk[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int idx = tid + i * kThreads;  // 0..511: 64 rows x 8 chunks
    a_row[i] = idx >> 3;
    a_chunk[i] = idx & 7;
    a_src[i] = nullptr;
    if (a_row[i] < rows_valid) {
      const int pr = pstart + a_row[i];
      const std::size_t src = kGateUp ? static_cast<std::size_t>(p.sorted_pairs[pr] / p.slots)
                                      : static_cast<std::size_t>(pr);
      a_src[i] = reinterpret_cast<const std::uint16_t*>(p.input) + src * K;
    }
  }
  // Weight row of B-tile row n.
  auto weight_row = [&](int n) -> int {
    if (kGateUp) return n < kBN / 2 ? col0 + n : p.out_rows + col0 + (n - kBN / 2);
    return col0 + n;
  };
  auto weight_row_ok = [&](int n) -> bool {
    return kGateUp ? col0 + (n % (kBN / 2)) < p.out_rows : col0 + n < p.out_rows;
  };

  constexpr int kBLoads = F == WeightFormat::bf16 ? 4 : 1;
  uint4 ra[4], rb[kBLoads];
  float rscale = 0.f;
  const int groups = int4_groups(K);

  auto fetch = [&](int k0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = k0 + a_chunk[i] * 8;
      ra[i] = (a_src[i] && k < K) ? __ldg(reinterpret_cast<const uint4*>(a_src[i] + k)) : make_uint4(0, 0, 0, 0);
    }
    if constexpr (F == WeightFormat::bf16) {
      const std::uint16_t* w = static_cast<const std::uint16_t*>(p.weights[e]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int idx = tid + i * kThreads;
        const int n = idx >> 3, k = k0 + (idx & 7) * 8;
        rb[i] = (weight_row_ok(n) && k < K)
                    ? __ldcs(reinterpret_cast<const uint4*>(w + static_cast<std::size_t>(weight_row(n)) * K + k))
                    : make_uint4(0, 0, 0, 0);
      }
    } else {
      const std::uint32_t* w = static_cast<const std::uint32_t*>(p.weights[e]);
      const int n = tid >> 1, k = k0 + (tid & 1) * 32;
      const bool ok = weight_row_ok(n) && k < K;
      rb[0] = ok ? __ldcs(reinterpret_cast<const uint4*>(w + static_cast<std::size_t>(weight_row(n)) * (K / 8) + k / 8))
                 : make_uint4(0x88888888u, 0x88888888u, 0x88888888u, 0x88888888u);  // q = 0
      rscale = ok ? __bfloat162float(__ushort_as_bfloat16(__ldg(
                        static_cast<const std::uint16_t*>(p.scales[e]) +
                        static_cast<std::size_t>(weight_row(n)) * groups + k / kInt4Group)))
                  : 0.f;
    }
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      *reinterpret_cast<uint4*>(&sm.in.a[buf][a_row[i]][a_chunk[i] * 8]) = ra[i];
    if constexpr (F == WeightFormat::bf16) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int idx = tid + i * kThreads;
        *reinterpret_cast<uint4*>(&sm.in.b[buf][idx >> 3][(idx & 7) * 8]) = rb[i];
      }
    } else {
      const int n = tid >> 1, kk = (tid & 1) * 32;
      const std::uint32_t q[4] = {rb[0].x, rb[0].y, rb[0].z, rb[0].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        std::uint32_t packed[4];
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          const float lo = static_cast<float>(int4_unpack(q[j], 2 * h)) * rscale;
          const float hi = static_cast<float>(int4_unpack(q[j], 2 * h + 1)) * rscale;
          packed[h] = detail::to_bf16_bits(lo) | (static_cast<std::uint32_t>(detail::to_bf16_bits(hi)) << 16);
        }
        *reinterpret_cast<uint4*>(&sm.in.b[buf][n][kk + 8 * j]) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
      }
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;

  const int ktiles = (K + kBK - 1) / kBK;
  fetch(0);
  stash(0);
  __syncthreads();
  for (int kt = 0; kt < ktiles; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < ktiles) fetch((kt + 1) * kBK);
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(fa[i], reinterpret_cast<const __nv_bfloat16*>(&sm.in.a[buf][wm + 16 * i][kk]), kLds);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], reinterpret_cast<const __nv_bfloat16*>(&sm.in.b[buf][wn + 16 * j][kk]), kLds);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    if (kt + 1 < ktiles) stash(buf ^ 1);
    __syncthreads();
  }
  // Epilogue through shared memory (the input buffers are dead after the last sync).
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&sm.c[wm + 16 * i][wn + 16 * j], acc[i][j], kLdc, wmma::mem_row_major);
  __syncthreads();
  if constexpr (kGateUp) {
    for (int idx = tid; idx < kBM * (kBN / 2); idx += kThreads) {
      const int r = idx / (kBN / 2), c = idx % (kBN / 2);
      if (r < rows_valid && col0 + c < p.out_rows) {
        const float hv = detail::silu(sm.c[r][c]) * sm.c[r][c + kBN / 2];
        reinterpret_cast<std::uint16_t*>(p.h_out)[static_cast<std::size_t>(pstart + r) * p.out_rows + col0 + c] =
            detail::to_bf16_bits(hv);
      }
    }
  } else {
    for (int idx = tid; idx < kBM * kBN; idx += kThreads) {
      const int r = idx / kBN, c = idx % kBN;
      if (r < rows_valid && col0 + c < p.out_rows)
        p.down_out[static_cast<std::size_t>(pstart + r) * p.out_rows + col0 + c] = sm.c[r][c];
    }
  }
#else
  __trap();  // never launched below sm_80: the host takes the decode path there
#endif
}

template <bool kGateUp>
void launch_tc(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  const MoeDims& d = a.dims;
  TcParams p{};
  void* s = a.scratch;
  p.weights = kGateUp ? a.experts.gate_up : a.experts.down;
  p.scales = kGateUp ? a.experts.gate_up_scales : a.experts.down_scales;
  p.input = kGateUp ? a.x : l.at<__nv_bfloat16>(s, l.h);
  p.k_len = kGateUp ? d.hidden : d.inter;
  p.out_rows = kGateUp ? d.inter : d.hidden;
  p.slots = l.slots;
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.num_tiles = l.at<int>(s, l.num_tiles);
  p.tiles = l.at<int2>(s, l.tiles);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.h_out = l.at<__nv_bfloat16>(s, l.h);
  p.down_out = l.at<float>(s, l.down_out);
  const int cols = kGateUp ? kBN / 2 : kBN;
  const dim3 grid(l.max_tiles, (p.out_rows + cols - 1) / cols);
  if (grid.y > 65535)
    throw Error(ExitCode::probe_error, "tensor-core gemm: " + std::to_string(grid.y) + " column tiles");
  if (d.format == WeightFormat::bf16)
    tc_expert_gemm_kernel<WeightFormat::bf16, kGateUp><<<grid, kThreads, 0, stream>>>(p);
  else
    tc_expert_gemm_kernel<WeightFormat::int4, kGateUp><<<grid, kThreads, 0, stream>>>(p);
  MOE_CHECK_LAUNCH("tc_expert_gemm_kernel");
}

}  // namespace

void enqueue_gate_up_tensor_core(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_tc<true>(a, l, stream);
}

void enqueue_down_tensor_core(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_tc<false>(a, l, stream);
}

}  // namespace moe::kernels
