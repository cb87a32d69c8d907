// Stages 2 and 3 for small M (the decode path): SIMT kernels that stream each active expert's
// weights once per chunk of kTokens of its tokens, with every warp its own software pipeline.
//
// Work: a unit is kRows weight rows of one expert that share their inputs (gate_up: gate row c
// and up row I + c, one h column; down: output rows 4j .. 4j + 3). Units are dealt to the
// warps of a resident grid round-robin (unit u to warp u mod warps), so every warp streams
// about the same bytes whatever the number of active experts, and a warp needs no barrier
// with any other: the time of an item is no longer a serial chain per block (v2 in
// docs/kernel-notes.md measured that chain at 35% of the read ceiling).
//
// Pipeline: a piece is a unit's rows over one K segment for one chunk of tokens. Each
// warp keeps kDepth pieces of weights in flight in registers (a ring with compile-time slots):
// it consumes the oldest and at once issues the load of the piece kDepth ahead, so the loads
// of the next pieces (possibly of another expert) are in flight while it computes.
//
// Order: the shared experts come first. They are active for every token whatever the router
// says, so gate_up streams them before it waits for the route kernel (under programmatic
// dependent launch that overlaps routing); the routed experts follow once the route kernel's
// active list is visible. down waits first (it reads h) but asks L2 for its shared rows
// before, then runs one pipeline over every expert. A block copies the active experts' weight
// pointers and pair ranges into shared memory once, so the issue of a piece costs no
// dependent global load.
// Activations (x rows, h rows) are read through L1: a token's row is shared by every warp.
//
// Measured (H200, graph replay, weights rotated past L2; docs/kernel-notes.md): deepseek-v2-lite
// bf16 M=1 gate_up 25.9 us (floor 19.9 at 4.64 TB/s), down 15.3 us (floor 9.9), each alone;
// the layer at 62% of the read ceiling in the kernel bench (56% at engine level) where v2
// reached 38%.
#include <algorithm>
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxEntries = 1024;        // experts + shared (validated by the route stage)
constexpr int kSmemTokens = 4096;        // pair -> token map kept in shared memory up to here

template <WeightFormat F>
struct DecodeTraits;
template <>
struct DecodeTraits<WeightFormat::bf16> {
  static constexpr int kElemsPerVec = 8;   // bf16 per 16-byte load
};
template <>
struct DecodeTraits<WeightFormat::int4> {
  static constexpr int kElemsPerVec = 32;  // int4 codes per 16-byte load
};

// Piece shapes: rows of a unit (kRows), 16-byte loads per lane per row (kVecs) and pieces in
// flight per warp (kDepth), bounded by 128 registers a thread (two blocks of 8 warps per SM).
// Measured on an H200 (deepseek-v2-lite M=1, v4b in docs/kernel-notes.md): 4 vectors x 2 deep
// beat 2 x 3 for bf16 (gate_up 49 vs 55 us), 2 x 3 beat 1 x 4 for int4 (111 vs 122 us):
// per-piece overhead matters more than one piece in flight. A unit is 2 rows (gate_up: a gate
// row and its up row), except down at one token a pass: 4 output rows with half the vectors a
// row, so rows of I = 1408 (176 vectors) fill 92% of their segments instead of 69% (v5:
// down 16.1 -> 15.8 us at deepseek-v2-lite M=1; more rows spill registers once several tokens
// share a pass).
template <WeightFormat F, bool kGateUp, int kTokens>
struct PieceShape {
  static constexpr bool kFourRows = !kGateUp && kTokens == 1;
  static constexpr int kRows = kFourRows ? 4 : 2;
  static constexpr int kVecs = (F == WeightFormat::bf16 ? 4 : 2) / (kFourRows ? 2 : 1);
  static constexpr int kDepth = F == WeightFormat::bf16 ? 2 : 3;
};

struct DecodeParams {
  const void* const* weights;  // per expert
  const void* const* scales;   // per expert (int4)
  const __nv_bfloat16* input;  // gate_up: x [m, H]; down: h [pairs, I] in sorted order
  int k_len;                   // reduction length: H for gate_up, I for down
  int out_rows;                // gate_up: I (h columns); down: H
  int units;                   // units per expert (set per piece shape at launch)
  int m, top_k, slots;
  int experts, shared;
  const int* num_active;
  const int* active;  // routed ascending, then shared
  const int* offsets;
  const int* sorted_pairs;
  __nv_bfloat16* h_out;  // gate_up
  float* down_out;       // down
};

// An active expert as the pipeline sees it; entries 0 .. S-1 are the shared experts.
struct Entry {
  const uint4* weights;
  const std::uint16_t* scales;
  int first_pair;  // position of its first pair in sorted order
  int pairs;
};

struct BlockTables {
  Entry entries[kMaxEntries];
  int token_of_pair[kSmemTokens];
};

// float(q) for nibble n = q + 8: exact, two integer ops and one add.
__device__ __forceinline__ float nibble_to_float(std::uint32_t word, int j) {
  return __uint_as_float(0x4B000000u | ((word >> (4 * j)) & 0xFu)) - 8388616.0f;
}

// Where a piece is: active entry, row pair, token chunk, K segment. Kept incrementally (no
// division per piece: at a few hundred instructions per 2 KB piece the kernel is issue
// bound). The walk is the same on every lane, so control flow stays uniform in the warp.
struct PieceCursor {
  int entry;          // -1: past the warp's last piece
  int pair_row;       // unit within the entry: h column (gate_up) or output row pair (down)
  int chunk_segment;  // token chunk << 16 | K segment
  __device__ bool valid() const { return entry >= 0; }
  __device__ int chunk() const { return chunk_segment >> 16; }
  __device__ int segment() const { return chunk_segment & 0xFFFF; }
};

// kTokens: tokens sharing one pass over a unit's weights, a compile-time bound picked from M
// at launch (1, 2, 4 or 8): the consume loop is unrolled over it, and unrolled for 8 at M=1
// the kernel outgrew the instruction cache (ncu: 'no instruction' was its top stall).
template <WeightFormat F, bool kGateUp, int kRows, int kVecs, int kDepth, int kTokens>
struct DecodeWarp {
  using T = DecodeTraits<F>;
  static constexpr int kSegVecs = kVecs * 32;  // vectors of a row per segment

  DecodeParams p;
  const BlockTables& tables;
  int lane;
  int stride;  // warps in the grid
  int vecs_per_row;
  int segments;  // K segments of a row
  int groups;    // int4 scale groups per row
  int entry_end = 0;  // entries of the current phase end here

  __device__ DecodeWarp(const DecodeParams& params, const BlockTables& t, int lane_, int stride_)
      : p(params),
        tables(t),
        lane(lane_),
        stride(stride_),
        vecs_per_row(params.k_len / T::kElemsPerVec),
        segments((vecs_per_row + kSegVecs - 1) / kSegVecs),
        groups(int4_groups(params.k_len)) {}

  static constexpr int kCols = kGateUp ? kRows / 2 : kRows;  // outputs of a unit per token

  // down at one token a pass (bf16) loads a piece's activations with its weights: each unit is
  // another expert's h row, so unlike gate_up's x (one row, always in L1) they are often L2
  // misses of L1, and loaded in consume they put an L2 round trip in every piece's chain.
  static constexpr bool kInputInSlot = !kGateUp && kTokens == 1 && F == WeightFormat::bf16;

  // Ring slot: the weights of one piece (kRows rows), for int4 their scales, and with
  // kInputInSlot the activation vectors they multiply.
  struct Slot {
    uint4 w[kRows][kVecs];
    std::uint16_t scale_bits[kRows][kVecs];  // int4: bf16 bits, converted when consumed
    uint4 x[kInputInSlot ? kVecs : 1];
  };

  // Weight row r of unit j: gate_up's rows are kCols gate rows then the matching up rows.
  __device__ int rows_of(int j, int r) const {
    if constexpr (kGateUp) return r < kCols ? j * kCols + r : p.out_rows + j * kCols + (r - kCols);
    return j * kCols + r;  // down: kCols == kRows output rows
  }

  __device__ void advance(PieceCursor& c) const {
    if (c.segment() + 1 < segments) {
      ++c.chunk_segment;
      return;
    }
    const int chunk = c.chunk() + 1;
    if (chunk * kTokens < tables.entries[c.entry].pairs) {
      c.chunk_segment = chunk << 16;
      return;
    }
    c.chunk_segment = 0;
    c.pair_row += stride;  // the next unit dealt to this warp
    while (c.pair_row >= p.units) {
      c.pair_row -= p.units;
      ++c.entry;
    }
    if (c.entry >= entry_end) c.entry = -1;
  }

  __device__ void issue(Slot& s, const PieceCursor& c) const {
    const Entry& e = tables.entries[c.entry];
    const int j = c.pair_row;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::size_t row = static_cast<std::size_t>(rows_of(j, r));
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        // Past the row's end a lane loads the last vector again (consume counts it as zero):
        // a load whose result nothing selects on is not waited for until consume, whereas
        // `ok ? load : 0` makes the warp wait for the load right here.
        const int v = min(c.segment() * kSegVecs + lane + 32 * i, vecs_per_row - 1);
        // Weights are read once per step: stream them past L1 and L2 (evict-first).
        s.w[r][i] = __ldcs(e.weights + row * vecs_per_row + v);
        if constexpr (F == WeightFormat::int4)
          s.scale_bits[r][i] = __ldg(e.scales + row * groups + v * 32 / kInt4Group);
      }
    }
    if constexpr (kInputInSlot) {
      const uint4* in = input_vecs(input_row(e, c.chunk()));
#pragma unroll
      for (int i = 0; i < kVecs; ++i)
        s.x[i] = load_activation(in + min(c.segment() * kSegVecs + lane + 32 * i, vecs_per_row - 1));
    }
  }

  // The activation row a pair reads: its token's x row (gate_up) or its own h row (down).
  __device__ int input_row(const Entry& e, int pair) const {
    const int pos = e.first_pair + pair;
    if constexpr (kGateUp)
      return pos < kSmemTokens ? tables.token_of_pair[pos]
                               : detail::clamp_index(__ldg(p.sorted_pairs + pos) / p.slots, 0, p.m - 1);
    return pos;
  }
  // x is read-only for the whole forward: the non-coherent path. h was written by the kernel
  // before (and, under programmatic launch, while this grid was already resident): a plain
  // load, still cached in L1 (a read-only load of it would break the .nc contract).
  __device__ static uint4 load_activation(const uint4* at) {
    if constexpr (kGateUp) return __ldg(at);
    return *at;
  }
  __device__ const uint4* input_vecs(int row) const {
    return reinterpret_cast<const uint4*>(p.input + static_cast<std::size_t>(row) * p.k_len);
  }

  // Multiplies a piece into the accumulators; at the last segment writes the chunk's outputs.
  __device__ void consume(const Slot& s, const PieceCursor& c, float (&acc)[kRows][kTokens]) const {
    const Entry& e = tables.entries[c.entry];
    const int t0 = c.chunk() * kTokens;
    const int tn = min(kTokens, e.pairs - t0);
    if (c.segment() == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < kTokens; ++t) acc[r][t] = 0.f;
    }
    int rows[kTokens];
#pragma unroll
    for (int t = 0; t < kTokens; ++t) rows[t] = t < tn ? input_row(e, t0 + t) : 0;
    // No branch on the row's end inside the loop (so the compiler can hoist every activation
    // load ahead of the math): past the end a lane reads the last vector again and its weights
    // count as zero.
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int v_at = c.segment() * kSegVecs + lane + 32 * i;
      const bool ok = v_at < vecs_per_row;
      const int v = min(v_at, vecs_per_row - 1);
      {
        if constexpr (F == WeightFormat::bf16) {
          float wf[kRows][8];
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const std::uint32_t a[4] = {s.w[r][i].x, s.w[r][i].y, s.w[r][i].z, s.w[r][i].w};
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              wf[r][2 * q] = ok ? detail::bf16_lo(a[q]) : 0.f;
              wf[r][2 * q + 1] = ok ? detail::bf16_hi(a[q]) : 0.f;
            }
          }
#pragma unroll
          for (int t = 0; t < kTokens; ++t) {
            if (t == 0 || t < tn) {
              uint4 xv;
              if constexpr (kInputInSlot) xv = s.x[i];
              else xv = load_activation(input_vecs(rows[t]) + v);
              const std::uint32_t xw[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const float lo = detail::bf16_lo(xw[q]), hi = detail::bf16_hi(xw[q]);
#pragma unroll
                for (int r = 0; r < kRows; ++r) {
                  acc[r][t] = fmaf(wf[r][2 * q], lo, acc[r][t]);
                  acc[r][t] = fmaf(wf[r][2 * q + 1], hi, acc[r][t]);
                }
              }
            }
          }
        } else {
          // Dequantise a row's codes a word (8 codes) at a time and use them for every token
          // of the chunk; the 32-code dot of a token is summed before its scale is applied.
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const float scale = ok ? __bfloat162float(__ushort_as_bfloat16(s.scale_bits[r][i])) : 0.f;
            float sum[kTokens];
#pragma unroll
            for (int t = 0; t < kTokens; ++t) sum[t] = 0.f;
            const std::uint32_t words[4] = {s.w[r][i].x, s.w[r][i].y, s.w[r][i].z, s.w[r][i].w};
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              float qf[8];
#pragma unroll
              for (int j = 0; j < 8; ++j) qf[j] = nibble_to_float(words[q], j);
#pragma unroll
              for (int t = 0; t < kTokens; ++t) {
                if (t == 0 || t < tn) {
                  const uint4 x4 = load_activation(input_vecs(rows[t]) + 4 * v + q);  // 32 per vector
                  const std::uint32_t xw[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
                  for (int h = 0; h < 4; ++h) {
                    sum[t] = fmaf(qf[2 * h], detail::bf16_lo(xw[h]), sum[t]);
                    sum[t] = fmaf(qf[2 * h + 1], detail::bf16_hi(xw[h]), sum[t]);
                  }
                }
              }
            }
#pragma unroll
            for (int t = 0; t < kTokens; ++t)
              if (t == 0 || t < tn) acc[r][t] = fmaf(sum[t], scale, acc[r][t]);
          }
        }
      }
    }
    if (c.segment() + 1 < segments) return;
    // Epilogue: butterfly sums (fixed order, every lane ends with the total); lane t writes
    // token t of the chunk.
    const int j = c.pair_row;
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < tn) {
        float sum[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) sum[r] = detail::warp_sum(acc[r][t]);
        if (lane == t) {
          const std::size_t pos = static_cast<std::size_t>(e.first_pair + t0 + t);
          if constexpr (kGateUp) {
#pragma unroll
            for (int col = 0; col < kCols; ++col)
              reinterpret_cast<std::uint16_t*>(p.h_out)[pos * p.out_rows + j * kCols + col] =
                  detail::to_bf16_bits(detail::silu(sum[col]) * sum[kCols + col]);
          } else {
            float* out = p.down_out + pos * p.out_rows + j * kRows;
#pragma unroll
            for (int r = 0; r < kRows; ++r) out[r] = sum[r];
          }
        }
      }
    }
  }

  // Asks L2 for the weight rows of the warp's units from `first` (entry-major, dealt every
  // `stride`) below unit `end`: a unit's rows, lane by lane, one 128-byte line a request.
  // Only down uses it; its rows are adjacent.
  __device__ void prefetch_l2(int first, int end) const {
    const int lines = (kRows * vecs_per_row * 16 + 127) / 128;
    for (int u = first; u < end; u += stride) {
      const Entry& e = tables.entries[u / p.units];
      const std::size_t first_row = static_cast<std::size_t>(rows_of(u % p.units, 0));
      const char* rows = reinterpret_cast<const char*>(e.weights + first_row * vecs_per_row);
      for (int i = lane; i < lines; i += 32)
        detail::prefetch_l2(rows + static_cast<std::size_t>(i) * 128);
    }
  }

  // Streams the warp's units from unit index `first` (entry-major) up to entry `end` through
  // the ring.
  __device__ void run(int first, int end) {
    entry_end = end;
    PieceCursor c{first / p.units, first % p.units, 0};
    if (c.entry >= end) c.entry = -1;
    Slot ring[kDepth];
    PieceCursor at[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      at[d] = c;
      if (c.valid()) {
        issue(ring[d], c);
        advance(c);
      }
    }
    float acc[kRows][kTokens];
    for (;;) {
#pragma unroll
      for (int d = 0; d < kDepth; ++d) {
        if (!at[d].valid()) return;
        consume(ring[d], at[d], acc);
        at[d] = c;
        if (c.valid()) {
          issue(ring[d], c);
          advance(c);
        }
      }
    }
  }
};

// The warp's first unit index >= begin in the round-robin deal (unit u goes to warp u % stride).
__device__ __forceinline__ int first_unit_from(int begin, int warp_id, int stride) {
  const int r = begin % stride;
  return begin - r + warp_id + (warp_id < r ? stride : 0);
}

template <WeightFormat F, bool kGateUp, int kTokens>
__global__ void __launch_bounds__(kThreads, 2) decode_expert_gemm_kernel(DecodeParams p) {
  using Shape = PieceShape<F, kGateUp, kTokens>;
  using Warp = DecodeWarp<F, kGateUp, Shape::kRows, Shape::kVecs, Shape::kDepth, kTokens>;
  __shared__ BlockTables tables;
  detail::allow_dependent_launch();
  const int lane = threadIdx.x & 31;
  const int warp_id = blockIdx.x * kWarps + (threadIdx.x >> 5);
  const int stride = gridDim.x * kWarps;
  const int S = p.shared, E = p.experts;
  const int routed_pairs = p.m * p.top_k;

  // Shared experts: their pairs sit after every routed pair, in token order (the grouping
  // puts experts in id order and shared ids follow routed ones), so no routing is needed.
  for (int s = threadIdx.x; s < S; s += kThreads) {
    tables.entries[s] = Entry{static_cast<const uint4*>(p.weights[E + s]),
                              F == WeightFormat::int4 ? static_cast<const std::uint16_t*>(p.scales[E + s]) : nullptr,
                              routed_pairs + s * p.m, p.m};
  }
  if (kGateUp)
    for (int i = threadIdx.x; i < S * p.m && routed_pairs + i < kSmemTokens; i += kThreads)
      tables.token_of_pair[routed_pairs + i] = i % p.m;
  __syncthreads();

  Warp w(p, tables, lane, stride);
  const int shared_units = S * p.units;

  if (kGateUp) {
    // gate_up streams the shared experts first and waits for the route kernel only when it
    // needs the routed ones.
    w.run(first_unit_from(0, warp_id, stride), S);
    detail::grid_dependency_wait();
  } else {
    // down reads h, written by gate_up, so it waits before its first load; but the shared
    // experts' rows it will stream first are known now: pull them into L2 while gate_up's last
    // blocks finish. After the wait, routing (older than gate_up) is complete too, so the
    // table is filled once and one pipeline runs over every expert, with no drain between.
    w.prefetch_l2(first_unit_from(0, warp_id, stride), shared_units);
    detail::grid_dependency_wait();
  }

  // Everything below comes from the route stage through scratch: clamped (see clamp_index).
  // Every routed entry is filled, not just the active ones: under a running forward whose
  // scratch is overwritten (the bugs scratch-regrow reproduces) each thread may read another
  // active count, and a warp walked entries that no thread had filled (an illegal address, 1
  // run in 24, found in a GPU core dump). Past the active ones the list holds -1 (clamped to
  // expert 0, never walked). The loads run in parallel, as the active ones' did.
  const int total = E + S, pairs = p.m * p.slots;
  const int active = detail::clamp_index(__ldcg(p.num_active), S, total);
  for (int i = threadIdx.x; i < E; i += kThreads) {
    const int e = detail::clamp_index(__ldcg(p.active + i), 0, total - 1);
    const int first = detail::clamp_index(__ldcg(p.offsets + e), 0, pairs - 1);
    const int count = detail::clamp_index(__ldcg(p.offsets + e + 1) - first, 1, pairs - first);
    tables.entries[S + i] = Entry{static_cast<const uint4*>(p.weights[e]),
                                  F == WeightFormat::int4 ? static_cast<const std::uint16_t*>(p.scales[e]) : nullptr,
                                  first, count};
  }
  if (kGateUp)
    for (int i = threadIdx.x; i < routed_pairs && i < kSmemTokens; i += kThreads)
      tables.token_of_pair[i] = detail::clamp_index(__ldcg(p.sorted_pairs + i) / p.slots, 0, p.m - 1);
  __syncthreads();
  w.run(first_unit_from(kGateUp ? shared_units : 0, warp_id, stride), active);
}

template <WeightFormat F, bool kGateUp, int kTokens>
void launch_decode_shape(DecodeParams p, long long max_active, cudaStream_t stream) {
  constexpr int rows = PieceShape<F, kGateUp, kTokens>::kRows;
  p.units = kGateUp ? p.out_rows / (rows / 2) : p.out_rows / rows;  // H % 32 == 0, validated
  constexpr auto kernel = decode_expert_gemm_kernel<F, kGateUp, kTokens>;
  const long long resident = detail::resident_blocks<kernel, kThreads>();
  const long long wanted = (max_active * p.units + kWarps - 1) / kWarps;
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min(wanted, resident)));
  detail::launch(kernel, dim3(grid), dim3(kThreads), 0, stream, /*programmatic=*/true,
                 "decode_expert_gemm_kernel", p);
}

template <WeightFormat F, bool kGateUp>
void launch_decode_format(const DecodeParams& p, long long max_active, cudaStream_t stream) {
  // An expert holds at most one pair per token: M bounds the tokens of a pass.
  if (p.m <= 1) return launch_decode_shape<F, kGateUp, 1>(p, max_active, stream);
  if (p.m <= 2) return launch_decode_shape<F, kGateUp, 2>(p, max_active, stream);
  if (p.m <= 4) return launch_decode_shape<F, kGateUp, 4>(p, max_active, stream);
  launch_decode_shape<F, kGateUp, 8>(p, max_active, stream);
}

template <bool kGateUp>
void launch_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  const MoeDims& d = a.dims;
  if (d.total_experts() > kMaxEntries)
    throw Error(ExitCode::probe_error, "decode kernels: experts + shared " + std::to_string(d.total_experts()) +
                                           " above " + std::to_string(kMaxEntries));
  DecodeParams p{};
  void* s = a.scratch;
  p.weights = kGateUp ? a.experts.gate_up : a.experts.down;
  p.scales = kGateUp ? a.experts.gate_up_scales : a.experts.down_scales;
  p.input = kGateUp ? a.x : l.at<__nv_bfloat16>(s, l.h);
  p.k_len = kGateUp ? d.hidden : d.inter;
  p.out_rows = kGateUp ? d.inter : d.hidden;
  p.m = a.m;
  p.top_k = d.top_k;
  p.slots = l.slots;
  p.experts = d.experts;
  p.shared = d.shared;
  p.num_active = l.at<int>(s, l.num_active);
  p.active = l.at<int>(s, l.active_experts);
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.h_out = l.at<__nv_bfloat16>(s, l.h);
  p.down_out = l.at<float>(s, l.down_out);
  // Worst case of active experts: every routed one any pair could pick, plus the shared ones.
  const long long max_active =
      std::min<long long>(d.experts, static_cast<long long>(a.m) * d.top_k) + d.shared;
  if (d.format == WeightFormat::bf16)
    launch_decode_format<WeightFormat::bf16, kGateUp>(p, max_active, stream);
  else
    launch_decode_format<WeightFormat::int4, kGateUp>(p, max_active, stream);
}

}  // namespace

void enqueue_gate_up_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<true>(a, l, stream);
}

void enqueue_down_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<false>(a, l, stream);
}

}  // namespace moe::kernels
