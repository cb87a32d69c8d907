// Stages 2 and 3 for large M on Hopper (sm_90a, bf16 and int4): a persistent, warp-specialised grouped
// GEMM on warp-group MMAs (ForwardOptions::tiles, TensorCoreTiles::wgmma).
//
// One block an SM, three warp groups: the first copies, the other two multiply. A tile is 128
// pairs of one expert (64 a consumer warp group) x kBN output columns; the blocks walk the
// layer's tiles in the order of wgmma_tile::tile_work, built in each block's shared memory from
// the route's expert offsets, so all SMs work whatever the experts' sizes and no tile list is
// read (experts in turn, each in bands of row tiles where that shares activations through L2).
// The copying warp group gathers each pair's activation row (x by token for gate_up, h by
// pair for down) and the expert's weight rows with cp.async into a ring of K blocks in the
// 128-byte swizzle wgmma reads; the consumers multiply each K block with four m64nNk16 MMAs and
// release it as soon as those have read it. gate_up's kBN columns are kBN/2 gate rows and the
// kBN/2 matching up rows, so each thread holds both halves of its SwiGLU outputs and writes h
// from registers; down writes its fp32 rows from registers. The copier moves on to the next
// tile while the consumers write, so a tile's epilogue hides under the next tile's loads. int4
// stages carry packed codes, which the consumers dequantise into a bf16 tile before the MMAs; the
// codes are read in the row layout or in the stream tiles (Int4Layout), the same 32 codes a copy,
// and bf16 weights in rows or in the stream family's stage tiles (Bf16Layout), 8 values a copy.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/cp_async.cuh"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/expert_gemm_operands.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/launch.cuh"
#include "kernels/moe/stage_ring.cuh"
#include "kernels/moe/wgmma.cuh"
#include "kernels/moe/wgmma_tile.hpp"

namespace moe::kernels {

namespace {

namespace wt = wgmma_tile;

constexpr int kBM = 2 * wt::kWarpGroupRows;  // 128 pairs: two consumer warp groups
constexpr int kThreads = 384;               // copier warp group + two consumer warp groups
constexpr int kConsumerWarps = 8;

// Output columns of a tile (gate_up: half gate rows, half up rows) and the ring's depth. int4
// stages carry the packed codes (32 bytes a row and K block); the consumers dequantise them into
// one of three bf16 tiles (three, so a warp group never overwrites a tile the other's MMAs may
// still read: its own wait for the MMAs two stages back and the barrier after the previous
// dequantisation cover both).
template <WeightFormat F, int kBN>
struct WgmmaConfig {
  static constexpr bool kInt4 = F == WeightFormat::int4;
  static constexpr int kStageA = kBM * wt::kRowBytes;
  static constexpr int kStageB = kInt4 ? kBN * wt::kRowBytes / 4 : kBN * wt::kRowBytes;
  static constexpr int kStage = kStageA + kStageB;
  static constexpr int kDequantTiles = kInt4 ? 3 : 0;
  static constexpr int kDequant = kDequantTiles * kBN * wt::kRowBytes;
  static constexpr int kRingBudget = 200 * 1024 - kDequant;
  static constexpr int kStages = kRingBudget / kStage < 8 ? kRingBudget / kStage : 8;
  static_assert(kStages >= 3, "the copier announces a stage one stage late");
  static_assert(kStage % 1024 == 0, "every stage on a swizzle-atom boundary");
  // 1 KB for aligning the ring to the swizzle atom, then the ring, the dequantised tiles, the
  // barriers and the tile table (first row tile and pair offset of each expert).
  static int bytes(int experts) {
    return 1024 + kStages * kStage + kDequant + 2 * kStages * 8 + 2 * (experts + 1) * 4;
  }
};

__device__ __forceinline__ void fence_async_shared() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // cp.async writes through the generic proxy, wgmma reads through the async one.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

template <WeightFormat F, int kBN, bool kGateUp, Int4Layout L, Bf16Layout LB>
__global__ void __launch_bounds__(kThreads, 1) wgmma_expert_gemm_kernel(ExpertGemmOperands p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgmmaConfig<F, kBN>;
  constexpr int kStages = C::kStages;
  extern __shared__ unsigned char smem_raw[];
  // The swizzle is on the address, so the ring starts on a 1 KB boundary of the shared window.
  const std::uint32_t raw = ring::smem_address(smem_raw);
  unsigned char* ring_base = smem_raw + ((1024 - (raw & 1023)) & 1023);
  unsigned char* dequant_base = ring_base + kStages * C::kStage;  // int4: kDequantTiles bf16 tiles
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(dequant_base + C::kDequant);
  std::uint64_t* empty = full + kStages;
  const int experts = p.total_experts;
  int* first_tile = reinterpret_cast<int*>(empty + kStages);  // [experts + 1]
  int* offsets = first_tile + experts + 1;                     // [experts + 1]

  // The tile table, read once for the block: scratch overwritten under a running forward (the
  // bugs the probes reproduce) must give wrong numbers, never threads that disagree on a tile.
  const int tid = threadIdx.x;
  for (int e = tid; e <= experts; e += kThreads) offsets[e] = detail::clamp_index(p.offsets[e], 0, p.pairs);
  if (tid == 0) {
    // full: each of the copier's 128 threads arrives once its own copies have landed; empty:
    // each consumer warp arrives once its MMAs have read the stage.
    for (int s = 0; s < kStages; ++s) {
      ring::init(&full[s], 128);
      ring::init(&empty[s], kConsumerWarps);
    }
    ring::fence_init();
  }
  __syncthreads();
  if (tid < 32) {  // first_tile: prefix sum of each expert's row tiles, 32 experts a step
    int carry = 0;
    for (int base = 0; base < experts; base += 32) {
      const int e = base + tid;
      int tiles = 0;
      if (e < experts) tiles = (max(offsets[e + 1] - offsets[e], 0) + kBM - 1) / kBM;
      int incl = tiles;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (tid >= o) incl += v;
      }
      if (e < experts) first_tile[e] = carry + incl - tiles;
      carry += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (tid == 0) first_tile[experts] = carry;
  }
  __syncthreads();

  const int K = p.k_len;
  const int ktiles = (K + wt::kBlockK - 1) / wt::kBlockK;
  const int col_tiles = kGateUp ? (p.out_rows + kBN / 2 - 1) / (kBN / 2) : (p.out_rows + kBN - 1) / kBN;
  const int total_tiles = first_tile[experts] * col_tiles;
  const int band = wt::tile_band(kGateUp, col_tiles);
  const int wg = tid / 128, t = tid % 128;

  if (wg == 0) {
    // Copier: thread t copies chunk t % 8 of rows t / 8 + 16 j of both operands.
    const int chunk = t % wt::kChunks, row0 = t / wt::kChunks;
    std::uint32_t it = 0;
    for (int n = blockIdx.x; n < total_tiles; n += gridDim.x) {
      const wt::TileWork w = wt::tile_work(n, first_tile, experts, offsets, kBM, col_tiles, band);
      const __nv_bfloat16* a_src[kBM / 16];
#pragma unroll
      for (int j = 0; j < kBM / 16; ++j) {
        const int r = row0 + 16 * j;
        a_src[j] = nullptr;
        if (r < w.rows) {
          const int pr = w.first_pair + r;
          const int src = kGateUp ? detail::clamp_index(p.sorted_pairs[pr] / p.slots, 0, p.m - 1) : pr;
          a_src[j] = p.input + static_cast<std::size_t>(src) * K + chunk * 8;
        }
      }
      // Weight rows: bf16, chunk t % 8 of rows t / 8 + 16 j; int4, 16-byte chunk t % 2 (32
      // codes) of rows t / 2 + 64 j. bf16 in the stage tiles: the row's part of the offset here,
      // the K block's part (the same for all of this thread's rows) in the loop.
      constexpr int kBRowsPerPass = C::kInt4 ? 64 : 16;
      constexpr int kBCopies = kBN / kBRowsPerPass;
      const int b_chunk = C::kInt4 ? t % 2 : chunk, b_row0 = C::kInt4 ? t / 2 : row0;
      const unsigned char* b_src[kBCopies];
      wt::Int4RowPlace<L> b_place[kBCopies];  // int4
#pragma unroll
      for (int j = 0; j < kBCopies; ++j) {
        const int row = wt::tile_weight_row(b_row0 + kBRowsPerPass * j, w.col_tile, kBN, p.out_rows, kGateUp);
        if (C::kInt4 && row >= 0) b_place[j] = wt::Int4RowPlace<L>(row, kGateUp ? p.out_rows : 0);
        b_src[j] = row >= 0 ? static_cast<const unsigned char*>(p.weights[w.expert]) : nullptr;
        if (!C::kInt4 && row >= 0) {
          if constexpr (LB == Bf16Layout::stream_tiles)
            b_src[j] += wt::Bf16TilePlace(row, kGateUp ? p.out_rows : 0, K).row_bytes;
          else
            b_src[j] += static_cast<std::size_t>(row) * K * 2 + b_chunk * 16;
        }
      }
      for (int kt = 0; kt < ktiles; ++kt, ++it) {
        const int s = static_cast<int>(it % kStages);
        ring::wait(&empty[s], ((it / kStages) & 1) ^ 1);
        unsigned char* sa = ring_base + s * C::kStage;
        unsigned char* sb = sa + C::kStageA;
        const int k = kt * wt::kBlockK + chunk * 8;
        const bool k_ok = k < K;
        const std::size_t b_k = LB == Bf16Layout::stream_tiles ? wt::Bf16TilePlace::k_bytes(k)
                                                               : static_cast<std::size_t>(kt) * wt::kRowBytes;
#pragma unroll
        for (int j = 0; j < kBM / 16; ++j) {
          const bool ok = k_ok && a_src[j] != nullptr;
          detail::cp_async16(sa + wt::swizzled_offset(row0 + 16 * j, chunk),
                             ok ? a_src[j] + kt * wt::kBlockK : static_cast<const void*>(p.input), ok);
        }
#pragma unroll
        for (int j = 0; j < kBCopies; ++j) {
          if constexpr (C::kInt4) {  // packed rows side by side, 32 bytes each (the consumers' reads)
            const int kc = kt * wt::kBlockK + b_chunk * 32;
            const bool ok = kc < K && b_src[j] != nullptr;
            const void* src = p.input;
            if (ok) src = b_src[j] + b_place[j].codes_offset(K, kc);
            detail::cp_async16(sb + (b_row0 + kBRowsPerPass * j) * 32 + b_chunk * 16, src, ok);
          } else {
            const bool ok = k_ok && b_src[j] != nullptr;
            detail::cp_async16(sb + wt::swizzled_offset(b_row0 + kBRowsPerPass * j, b_chunk),
                               ok ? b_src[j] + b_k : static_cast<const void*>(p.input), ok);
          }
        }
        detail::cp_async_commit();
        // The previous K block's copies are this thread's older group: once landed, they are
        // handed to the async proxy and announced (one block behind, so copies overlap).
        if (it > 0) {
          detail::cp_async_wait<1>();
          fence_async_shared();
          ring::arrive(&full[(it - 1) % kStages]);
        }
      }
    }
    if (it > 0) {
      detail::cp_async_wait<0>();
      fence_async_shared();
      ring::arrive(&full[(it - 1) % kStages]);
    }
    return;
  }

  // Consumers: warp group wg multiplies rows 64 (wg - 1).. of each tile.
  const int wg_row0 = (wg - 1) * wt::kWarpGroupRows;
  const int lane = tid % 32;
  std::uint32_t it = 0;
  float acc[kBN / 2] = {};
  for (int n = blockIdx.x; n < total_tiles; n += gridDim.x) {
    const wt::TileWork w = wt::tile_work(n, first_tile, experts, offsets, kBM, col_tiles, band);
    const bool active = wg_row0 < w.rows;  // a tile of 64 rows or fewer leaves the second idle
    // int4: thread ct of the two consumer warp groups dequantises 32 codes (16 packed bytes) of
    // rows ct / 2 + 128 j each stage, with the row's group scale loaded a K block ahead.
    constexpr int kDequantRows = C::kInt4 ? kBN / 128 : 0;
    const std::uint16_t* scale_row[kDequantRows > 0 ? kDequantRows : 1] = {};
    std::uint16_t scale_now[kDequantRows > 0 ? kDequantRows : 1] = {};
    const int groups = int4_groups(K);
    constexpr int kScaleStep = wt::Int4RowPlace<L>::scale_step;
    if constexpr (C::kInt4) {
#pragma unroll
      for (int j = 0; j < kDequantRows; ++j) {
        const int row = wt::tile_weight_row((tid - 128) / 2 + 128 * j, w.col_tile, kBN, p.out_rows, kGateUp);
        scale_row[j] = row >= 0 ? static_cast<const std::uint16_t*>(p.scales[w.expert]) +
                                      wt::Int4RowPlace<L>(row, kGateUp ? p.out_rows : 0).scale_base(K)
                                : nullptr;
        scale_now[j] = scale_row[j] ? __ldg(scale_row[j]) : std::uint16_t{0};
      }
    }
    for (int kt = 0; kt < ktiles; ++kt, ++it) {
      const int s = static_cast<int>(it % kStages);
      std::uint32_t b = ring::smem_address(ring_base + s * C::kStage + C::kStageA);
      if constexpr (C::kInt4) {
        static_assert(kInt4Group % wt::kBlockK == 0, "one scale a row and K block");
        std::uint16_t scale_next[kDequantRows];
#pragma unroll
        for (int j = 0; j < kDequantRows; ++j) {
          const int g = min((kt + 1) * wt::kBlockK / kInt4Group, groups - 1);
          scale_next[j] = scale_row[j] ? __ldg(scale_row[j] + g * kScaleStep) : std::uint16_t{0};
        }
        ring::wait(&full[s], (it / kStages) & 1);
        unsigned char* tile = dequant_base + (it % C::kDequantTiles) * (kBN * wt::kRowBytes);
        const unsigned char* packed = ring_base + s * C::kStage + C::kStageA;
#pragma unroll
        for (int j = 0; j < kDequantRows; ++j) {
          const int q = (tid - 128) + 256 * j, nn = q / 2, half = q % 2;
          const uint4 words = *reinterpret_cast<const uint4*>(packed + nn * 32 + half * 16);
          const std::uint32_t wv[4] = {words.x, words.y, words.z, words.w};
#pragma unroll
          for (int c = 0; c < 4; ++c) {  // word c: codes 8c.. of this half, chunk 4 half + c of the row
            std::uint32_t out[4];
            if constexpr (L == Int4Layout::stream_tiles) wt::dequant_stream_word(wv[c], scale_now[j], out);
            else wt::dequant_word(wv[c], bf16_bits_to_float(scale_now[j]), out);
            *reinterpret_cast<uint4*>(tile + wt::swizzled_offset(nn, half * 4 + c)) =
                make_uint4(out[0], out[1], out[2], out[3]);
          }
          scale_now[j] = scale_next[j];
        }
        fence_async_shared();
        ring::sync_threads(1, 256);  // both halves of the tile written before either's MMAs
        b = ring::smem_address(tile);
      } else {
        ring::wait(&full[s], (it / kStages) & 1);
      }
      if (active) {
        const std::uint32_t a = ring::smem_address(ring_base + s * C::kStage) + wg_row0 * wt::kRowBytes;
#pragma unroll
        for (int r = 0; r < kBN / 2; ++r) wgmma::fence_operand(acc[r]);
        wgmma::fence();
#pragma unroll
        for (int kk = 0; kk < wt::kBlockK / wt::kMmaK; ++kk) {
          const std::uint64_t da = wt::smem_descriptor(a + kk * wt::kMmaK * 2);
          const std::uint64_t db = wt::smem_descriptor(b + kk * wt::kMmaK * 2);
          static_assert(kBN == 256, "the one MMA shape issued");
          wgmma::mma_m64n256k16(acc, da, db, kt > 0 || kk > 0);
        }
        wgmma::commit();
#pragma unroll
        for (int r = 0; r < kBN / 2; ++r) wgmma::fence_operand(acc[r]);
        wgmma::wait<1>();  // the previous K block's MMAs have read their stage
      }
      if (kt > 0 && lane == 0) ring::arrive(&empty[(it - 1) % kStages]);
    }
    wgmma::wait<0>();
#pragma unroll
    for (int r = 0; r < kBN / 2; ++r) wgmma::fence_operand(acc[r]);
    if (lane == 0) ring::arrive(&empty[(it - 1) % kStages]);
    if (!active) continue;

    // Epilogue from registers: register 4i + j is row .. + 8 (j / 2), column 8i + 2 (lane % 4) + j % 2.
    if constexpr (kGateUp) {
      constexpr int kGateRegs = kBN / 4;  // the up partner of register r is r + kGateRegs
#pragma unroll
      for (int r = 0; r < kGateRegs; r += 2) {
        const wt::AccumulatorPosition at = wt::accumulator_position(t, r);
        const int row = wg_row0 + at.row, col = w.col_tile * (kBN / 2) + at.col;
        if (row < w.rows && col < p.out_rows) {
          const float h0 = detail::silu(acc[r]) * acc[r + kGateRegs];
          const float h1 = detail::silu(acc[r + 1]) * acc[r + 1 + kGateRegs];
          const std::uint32_t packed =
              detail::to_bf16_bits(h0) | (static_cast<std::uint32_t>(detail::to_bf16_bits(h1)) << 16);
          *reinterpret_cast<std::uint32_t*>(p.h_out + static_cast<std::size_t>(w.first_pair + row) * p.out_rows +
                                            col) = packed;
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < kBN / 2; r += 2) {
        const wt::AccumulatorPosition at = wt::accumulator_position(t, r);
        const int row = wg_row0 + at.row, col = w.col_tile * kBN + at.col;
        if (row < w.rows && col < p.out_rows) {
          const std::size_t at_out = static_cast<std::size_t>(w.first_pair + row) * p.out_rows + col;
          if (p.down_bf16)  // DownRows::bf16: half the bytes to write here and for the combine to read
            reinterpret_cast<std::uint32_t*>(p.down_out)[at_out / 2] =
                detail::to_bf16_bits(acc[r]) | (static_cast<std::uint32_t>(detail::to_bf16_bits(acc[r + 1])) << 16);
          else
            *reinterpret_cast<float2*>(p.down_out + at_out) = make_float2(acc[r], acc[r + 1]);
        }
      }
    }
  }
#else
  (void)p;
  __trap();  // never launched outside sm_90a: wgmma_tiles_run refuses it there
#endif
}

// Output columns of a tile: 256 (128 h columns for gate_up), so each K block of activations
// brought into shared memory feeds twice the columns. Against 128 it was faster in every case
// measured (H100, M = 1024 and 4096, four shapes, both formats): mixtral bf16 M = 4096 5391
// against 7728 us.
constexpr int kTileCols = 256;

// Lets the kernel take the shared memory of a layer of `experts` (the tile table grows with E).
// The attribute only grows, per device, so a forward's launches make no call once a layer's
// preload (or its first launch) has set it: the enqueue stays off the driver.
template <WeightFormat F, bool kGateUp, Int4Layout L, Bf16Layout LB>
void configure_wgmma_kernel(int experts) {
  static std::atomic<int> configured[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  const int bytes = WgmmaConfig<F, kTileCols>::bytes(experts);
  if (dev < 64 && configured[dev].load() >= bytes) return;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(wgmma_expert_gemm_kernel<F, kTileCols, kGateUp, L, LB>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  if (dev < 64) {
    int seen = configured[dev].load();
    while (seen < bytes && !configured[dev].compare_exchange_weak(seen, bytes)) {
    }
  }
}

template <WeightFormat F, bool kGateUp, Int4Layout L, Bf16Layout LB = Bf16Layout::rows>
void launch_wgmma(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  ExpertGemmOperands p = expert_gemm_operands(a, l, kGateUp);
  p.down_bf16 = !kGateUp && down_rows_in_bf16(a.options, ExpertGemmKernels::wgmma_tiles);
  const int smem = WgmmaConfig<F, kTileCols>::bytes(p.total_experts);
  configure_wgmma_kernel<F, kGateUp, L, LB>(p.total_experts);
  const int upper = (l.pairs + kBM - 1) / kBM + p.total_experts;  // row tiles at most
  const int col_tiles = kGateUp ? (p.out_rows + kTileCols / 2 - 1) / (kTileCols / 2)
                                : (p.out_rows + kTileCols - 1) / kTileCols;
  const long long tiles = static_cast<long long>(upper) * col_tiles;
  const int grid = static_cast<int>(std::min<long long>(tiles, current_device_multiprocessors()));
  detail::launch(wgmma_expert_gemm_kernel<F, kTileCols, kGateUp, L, LB>, dim3(grid), dim3(kThreads), smem, stream,
                 /*programmatic=*/false, "wgmma_expert_gemm_kernel", p);
}

// The instantiation for a layer's format and that format's layout.
template <bool kGateUp>
void launch_wgmma_stage(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  if (a.dims.format == WeightFormat::bf16) {
    if (a.experts.bf16_layout == Bf16Layout::stream_tiles)
      return launch_wgmma<WeightFormat::bf16, kGateUp, Int4Layout::rows, Bf16Layout::stream_tiles>(a, l, stream);
    return launch_wgmma<WeightFormat::bf16, kGateUp, Int4Layout::rows>(a, l, stream);
  }
  switch (a.experts.int4_layout) {
    case Int4Layout::rows: return launch_wgmma<WeightFormat::int4, kGateUp, Int4Layout::rows>(a, l, stream);
    case Int4Layout::stream_tiles:
      return launch_wgmma<WeightFormat::int4, kGateUp, Int4Layout::stream_tiles>(a, l, stream);
    case Int4Layout::mma_fragments: break;
  }
  throw Error(ExitCode::probe_error, "the wgmma tiles read int4 weights in the rows or stream-tiles layout, not " +
                                         std::string(to_string(a.experts.int4_layout)));
}

}  // namespace

bool wgmma_tiles_run(const MoeDims& dims, const ForwardOptions& options, WeightLayouts layouts, int m) {
  return runs_wgmma_tiles(options, dims, layouts, m, current_device_sm());
}

void preload_wgmma_kernels(const MoeDims& dims, WeightLayouts layouts) {
  constexpr WeightFormat kBf16 = WeightFormat::bf16, kInt4 = WeightFormat::int4;
  constexpr Int4Layout kCodeRows = Int4Layout::rows, kCodeTiles = Int4Layout::stream_tiles;
  constexpr Bf16Layout kRows = Bf16Layout::rows, kTiles = Bf16Layout::stream_tiles;
  const int e = dims.total_experts();
  if (dims.format == kBf16 && layouts.bf16 == kTiles) {
    configure_wgmma_kernel<kBf16, true, kCodeRows, kTiles>(e);
    configure_wgmma_kernel<kBf16, false, kCodeRows, kTiles>(e);
  } else if (dims.format == kBf16) {
    configure_wgmma_kernel<kBf16, true, kCodeRows, kRows>(e);
    configure_wgmma_kernel<kBf16, false, kCodeRows, kRows>(e);
  } else if (layouts.int4 == kCodeTiles) {
    configure_wgmma_kernel<kInt4, true, kCodeTiles, kRows>(e);
    configure_wgmma_kernel<kInt4, false, kCodeTiles, kRows>(e);
  } else {
    configure_wgmma_kernel<kInt4, true, kCodeRows, kRows>(e);
    configure_wgmma_kernel<kInt4, false, kCodeRows, kRows>(e);
  }
}

void enqueue_gate_up_wgmma(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_wgmma_stage<true>(a, l, stream);
}

void enqueue_down_wgmma(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_wgmma_stage<false>(a, l, stream);
}

}  // namespace moe::kernels
