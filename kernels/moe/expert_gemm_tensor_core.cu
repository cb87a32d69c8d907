// Stages 2 and 3 for large M: grouped GEMM on bf16 tensor cores (wmma 16x16x16, fp32
// accumulate), sm_80 and newer. One block computes a 64 (pairs of one expert) x 64 (output
// columns) tile; the tile list (expert, first pair) was built on the device by the route stage,
// so the grid covers the worst-case tile count and blocks past num_tiles exit.
// gate_up tiles take 32 gate rows and the 32 matching up rows, so SwiGLU happens in the
// epilogue. Global -> shared copies are cp.async in a ring of kStages K tiles, so several
// tiles of weights are in flight per block while the tensor cores work on the oldest.
// int4 weights travel packed (4x fewer bytes) and are dequantised (q * scale, rounded to bf16)
// from the ring into a bf16 tile just before the MMAs.
#include <mma.h>

#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/cp_async.cuh"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/expert_gemm_operands.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

using detail::cp_async16;
using detail::cp_async_commit;
using detail::cp_async_wait;

constexpr int kBM = kTensorCoreTileRows;  // 64 pairs
constexpr int kBN = 64;
constexpr int kBK = 64;
constexpr int kLds = kBK + 8;  // padded row stride (elements) against bank conflicts
constexpr int kThreads = 128;  // 4 warps, 2 x 2, each 32 x 32
constexpr int kLdc = kBN + 4;

template <WeightFormat F>
struct TcTraits;
template <>
struct TcTraits<WeightFormat::bf16> {
  static constexpr int kStages = 4;
};
template <>
struct TcTraits<WeightFormat::int4> {
  static constexpr int kStages = 8;
};

// Shared memory layout (dynamic): kStages x {A bf16 [BM][kLds], B} then, for int4, the
// dequantised B tile. bf16 B: [BN][kLds] bf16. int4 B: packed [BN][BK/8] words + scales [BN].
template <WeightFormat F>
struct TcSmem {
  static constexpr int kA = kBM * kLds * 2;
  static constexpr int kB = F == WeightFormat::bf16 ? kBN * kLds * 2 : kBN * (kBK / 8) * 4 + kBN * 4;
  static constexpr int kStage = (kA + kB + 127) / 128 * 128;
  static constexpr int kDequant = F == WeightFormat::int4 ? kBN * kLds * 2 : 0;
  static constexpr int kC = kBM * kLdc * 4;
  static constexpr int kMain = TcTraits<F>::kStages * kStage + kDequant;
  static constexpr int kBytes = kMain > kC ? kMain : kC;
};

struct TcParams : ExpertGemmOperands {
  const int* num_tiles;
  const int2* tiles;
};

template <WeightFormat F, bool kGateUp>
__global__ void __launch_bounds__(kThreads) tc_expert_gemm_kernel(TcParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  using S = TcSmem<F>;
  constexpr int kStages = TcTraits<F>::kStages;
  extern __shared__ __align__(128) unsigned char smem[];
  // The tile's routing, read once for the block: scratch overwritten under a running forward
  // (the bugs scratch-regrow reproduces) could give each thread another value, and threads
  // that disagree on whether the tile exists would leave the others at a barrier.
  __shared__ int s_tile[3];  // expert (-1: no tile), first pair, rows
  if (threadIdx.x == 0) {
    const int tile = blockIdx.x;
    s_tile[0] = -1;
    if (tile < *p.num_tiles) {
      const int2 te = p.tiles[tile];
      const int e = detail::clamp_index(te.x, 0, p.total_experts - 1);
      const int pstart = detail::clamp_index(te.y, 0, p.pairs);
      s_tile[0] = e;
      s_tile[1] = pstart;
      s_tile[2] = detail::clamp_index(min(kBM, p.offsets[e + 1] - pstart), 0, p.pairs - pstart);
    }
  }
  __syncthreads();
  if (s_tile[0] < 0) return;
  const int e = s_tile[0], pstart = s_tile[1], rows_valid = s_tile[2];
  const int K = p.k_len;
  // Output columns of this block: gate_up -> 32 columns col0.. (gate rows col0.., up rows
  // I + col0..); down -> 64 columns.
  const int col0 = blockIdx.y * (kGateUp ? kBN / 2 : kBN);
  const int tid = threadIdx.x, warp = tid >> 5;

  auto stage_a = [&](int s) { return reinterpret_cast<std::uint16_t*>(smem + s * S::kStage); };
  auto stage_b = [&](int s) { return smem + s * S::kStage + S::kA; };
  std::uint16_t* dequant = reinterpret_cast<std::uint16_t*>(smem + kStages * S::kStage);

  // A rows (activations) this thread copies: 4 x (row, 16-byte chunk) per K tile.
  const std::uint16_t* a_src[4];
  int a_off[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int idx = tid + i * kThreads;  // 0..511: 64 rows x 8 chunks
    const int row = idx >> 3, chunk = idx & 7;
    a_off[i] = row * kLds + chunk * 8;
    a_src[i] = nullptr;
    if (row < rows_valid) {
      const int pr = pstart + row;
      const std::size_t src =
          kGateUp ? static_cast<std::size_t>(detail::clamp_index(p.sorted_pairs[pr] / p.slots, 0, p.m - 1))
                  : static_cast<std::size_t>(pr);
      a_src[i] = reinterpret_cast<const std::uint16_t*>(p.input) + src * K + chunk * 8;
    }
  }
  auto weight_row = [&](int n) -> int {
    if (kGateUp) return n < kBN / 2 ? col0 + n : p.out_rows + col0 + (n - kBN / 2);
    return col0 + n;
  };
  auto weight_row_ok = [&](int n) -> bool {
    return kGateUp ? col0 + (n % (kBN / 2)) < p.out_rows : col0 + n < p.out_rows;
  };
  const int groups = int4_groups(K);

  std::uint16_t pending_scale = 0;
  int pending_stage = -1;
  auto flush_scale = [&]() {
    if constexpr (F == WeightFormat::int4) {
      if (pending_stage >= 0) {
        float* ss = reinterpret_cast<float*>(stage_b(pending_stage) + kBN * (kBK / 8) * 4);
        ss[tid >> 1] = __bfloat162float(__ushort_as_bfloat16(pending_scale));
        pending_stage = -1;
      }
    }
  };
  auto issue = [&](int kt) {
    const int s = kt % kStages;
    const int k0 = kt * kBK;
    std::uint16_t* sa = stage_a(s);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = k0 + (((tid + i * kThreads) & 7) * 8);
      const bool ok = a_src[i] != nullptr && k < K;
      cp_async16(sa + a_off[i], ok ? a_src[i] + k0 : static_cast<const void*>(p.input), ok);
    }
    if constexpr (F == WeightFormat::bf16) {
      const std::uint16_t* w = static_cast<const std::uint16_t*>(p.weights[e]);
      std::uint16_t* sb = reinterpret_cast<std::uint16_t*>(stage_b(s));
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int idx = tid + i * kThreads;
        const int n = idx >> 3, k = k0 + (idx & 7) * 8;
        const bool ok = weight_row_ok(n) && k < K;
        cp_async16(sb + n * kLds + (idx & 7) * 8,
                   ok ? w + static_cast<std::size_t>(weight_row(n)) * K + k : w, ok);
      }
    } else {
      // 64 rows x 2 16-byte chunks (32 codes each) of packed words, plus one scale per row.
      const std::uint32_t* w = static_cast<const std::uint32_t*>(p.weights[e]);
      std::uint32_t* sb = reinterpret_cast<std::uint32_t*>(stage_b(s));
      const int n = tid >> 1, half = tid & 1;
      const int k = k0 + half * 32;
      const bool ok = weight_row_ok(n) && k < K;
      cp_async16(sb + n * (kBK / 8) + half * 4,
                 ok ? w + static_cast<std::size_t>(weight_row(n)) * (K / 8) + k / 8 : w, ok);
      // The scale is a 2-byte load (too small for cp.async): it is loaded into a register now
      // and stored to the stage one iteration later (flush_scale), so the load never stalls.
      flush_scale();
      if (half == 0 && weight_row_ok(n)) {
        pending_scale = __ldg(static_cast<const std::uint16_t*>(p.scales[e]) +
                              static_cast<std::size_t>(weight_row(n)) * groups + k0 / kInt4Group);
        pending_stage = s;
      } else if (half == 0) {
        pending_scale = 0;
        pending_stage = s;
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
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) issue(s);
    cp_async_commit();
  }
  // A single k tile is read in the first iteration: its scale must be stored before that
  // iteration's barrier, not after it (racecheck: a read-after-write hazard between the two
  // threads that store each scale).
  if (ktiles < kStages - 1) flush_scale();
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt landed for every thread; tile kt-1 fully consumed
    if (kt + kStages - 1 < ktiles) issue(kt + kStages - 1);
    else flush_scale();
    cp_async_commit();
    const int s = kt % kStages;
    const std::uint16_t* sb;
    int ldb;
    if constexpr (F == WeightFormat::bf16) {
      sb = reinterpret_cast<const std::uint16_t*>(stage_b(s));
      ldb = kLds;
    } else {
      // Scales are plain stores (not cp.async) made at least one barrier ago (kStages >= 3).
      const std::uint32_t* q = reinterpret_cast<const std::uint32_t*>(stage_b(s));
      const float* ss = reinterpret_cast<const float*>(q + kBN * (kBK / 8));
      const int n = tid >> 1, half = tid & 1;
      const float scale = ss[n];
      const uint4 words = *reinterpret_cast<const uint4*>(q + n * (kBK / 8) + half * 4);
      const std::uint32_t wq[4] = {words.x, words.y, words.z, words.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        std::uint32_t packed[4];
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          const float lo = static_cast<float>(int4_unpack(wq[j], 2 * h)) * scale;
          const float hi = static_cast<float>(int4_unpack(wq[j], 2 * h + 1)) * scale;
          packed[h] = detail::to_bf16_bits(lo) | (static_cast<std::uint32_t>(detail::to_bf16_bits(hi)) << 16);
        }
        *reinterpret_cast<uint4*>(dequant + n * kLds + half * 32 + 8 * j) =
            make_uint4(packed[0], packed[1], packed[2], packed[3]);
      }
      __syncthreads();
      sb = dequant;
      ldb = kLds;
    }
    const std::uint16_t* sa = stage_a(s);
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(fa[i], reinterpret_cast<const __nv_bfloat16*>(sa + (wm + 16 * i) * kLds + kk), kLds);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], reinterpret_cast<const __nv_bfloat16*>(sb + (wn + 16 * j) * ldb + kk), ldb);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every MMA done before the ring is reused for the epilogue
  float* sc = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(sc + (wm + 16 * i) * kLdc + wn + 16 * j, acc[i][j], kLdc, wmma::mem_row_major);
  __syncthreads();
  if constexpr (kGateUp) {
    for (int idx = tid; idx < kBM * (kBN / 2); idx += kThreads) {
      const int r = idx / (kBN / 2), c = idx % (kBN / 2);
      if (r < rows_valid && col0 + c < p.out_rows) {
        const float hv = detail::silu(sc[r * kLdc + c]) * sc[r * kLdc + c + kBN / 2];
        reinterpret_cast<std::uint16_t*>(p.h_out)[static_cast<std::size_t>(pstart + r) * p.out_rows + col0 + c] =
            detail::to_bf16_bits(hv);
      }
    }
  } else {
    for (int idx = tid; idx < kBM * kBN; idx += kThreads) {
      const int r = idx / kBN, c = idx % kBN;
      if (r < rows_valid && col0 + c < p.out_rows)
        p.down_out[static_cast<std::size_t>(pstart + r) * p.out_rows + col0 + c] = sc[r * kLdc + c];
    }
  }
#else
  __trap();  // never launched below sm_80: the host takes the decode path there
#endif
}

// Loads the kernel and lets it use its dynamic shared memory, once per device (the attribute
// call loads the kernel).
template <WeightFormat F, bool kGateUp>
void configure_tc_kernel() {
  static bool configured[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && configured[dev]) return;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(tc_expert_gemm_kernel<F, kGateUp>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TcSmem<F>::kBytes));
  if (dev < 64) configured[dev] = true;
}

template <WeightFormat F, bool kGateUp>
void launch_tc_format(const TcParams& p, dim3 grid, cudaStream_t stream) {
  configure_tc_kernel<F, kGateUp>();
  detail::launch(tc_expert_gemm_kernel<F, kGateUp>, grid, dim3(kThreads), TcSmem<F>::kBytes, stream,
                 /*programmatic=*/false, "tc_expert_gemm_kernel", p);
}

template <bool kGateUp>
void launch_tc(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  TcParams p{};
  static_cast<ExpertGemmOperands&>(p) = expert_gemm_operands(a, l, kGateUp);
  p.num_tiles = l.at<int>(a.scratch, l.num_tiles);
  p.tiles = l.at<int2>(a.scratch, l.tiles);
  const int cols = kGateUp ? kBN / 2 : kBN;
  const dim3 grid(l.max_tiles, (p.out_rows + cols - 1) / cols);
  if (grid.y > 65535)
    throw Error(ExitCode::probe_error, "tensor-core gemm: " + std::to_string(grid.y) + " column tiles");
  if (a.dims.format == WeightFormat::bf16)
    launch_tc_format<WeightFormat::bf16, kGateUp>(p, grid, stream);
  else
    launch_tc_format<WeightFormat::int4, kGateUp>(p, grid, stream);
}

}  // namespace

void preload_tensor_core_kernels(WeightFormat format) {
  if (current_device_sm() < 80) return;  // resolve_forward_path takes the decode path there
  if (format == WeightFormat::bf16) {
    configure_tc_kernel<WeightFormat::bf16, true>();
    configure_tc_kernel<WeightFormat::bf16, false>();
  } else {
    configure_tc_kernel<WeightFormat::int4, true>();
    configure_tc_kernel<WeightFormat::int4, false>();
  }
}

void enqueue_gate_up_tensor_core(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_tc<true>(a, l, stream);
}

void enqueue_down_tensor_core(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_tc<false>(a, l, stream);
}

}  // namespace moe::kernels
