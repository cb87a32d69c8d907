// Stages 2 and 3 for small M (the decode path): kernels that stream each active expert's
// weights once per chunk of its tokens, with every warp its own software pipeline. The warp
// kinds: SIMT for both formats (decode_warp.cuh) and int4 on tensor cores (int4_mma_warp.cuh,
// from M=2, int4_decode_on_tensor_cores()); what they share is in decode_walk.cuh.
//
// Work: a unit is kRows weight rows of one expert that share their inputs (gate_up: gate row c
// and up row I + c, one h column; down: output rows 4j .. 4j + 3). Units are dealt to the
// warps of a resident grid round-robin (unit u to warp u mod warps), so every warp streams
// about the same bytes whatever the number of active experts, and a warp needs no barrier
// with any other: the time of an item is not a serial chain per block (an earlier version,
// a block per (expert, row slice), measured that chain at 35% of the read ceiling).
//
// Pipeline: a piece is a unit's rows over one K segment for one chunk of tokens. Each
// warp keeps kDepth pieces of weights in flight in registers (a ring with compile-time slots):
// it consumes the oldest and at once issues the load of the piece kDepth ahead, so the loads
// of the next pieces (possibly of another expert) are in flight while it computes.
//
// Order: the shared experts come first. They are active for every token whatever the router
// says, so gate_up streams them before it waits for the route kernel (under programmatic
// dependent launch that overlaps routing; a block that can only start when the route's ranking
// block leaves its SM leaves them to the others, shared_expert_warps); the routed experts
// follow once the route kernel's active list is visible. down waits first (it reads h) but
// asks L2 for its shared rows before, then runs one pipeline over every expert. A block
// copies the active experts' weight pointers and pair ranges into shared memory once, so the
// issue of a piece costs no dependent global load.
// Activations (x rows, h rows) are read through L1: a token's row is shared by every warp.
//
// Code that runs right after a dependency wait is fetched cold, under a memory system loaded by
// the other warps' streams, so it is kept to one copy: at one token the table needs the active
// list alone, and gate_up's shared and routed phases run through one call site of
// stream_units. Current figures per stage: docs/design/kernels.md (deepseek-v2-lite bf16 M=1,
// H200: 46.2 us a layer in the engine, 1.47x its floor).
#include <algorithm>
#include <string>
#include <type_traits>

#include "common/cuda_check.hpp"
#include "kernels/moe/decode_walk.cuh"
#include "kernels/moe/decode_warp.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/int4_mma_warp.cuh"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

using namespace decode;

// The warp kind of a decode kernel: SIMT in its piece shape, or int4 on tensor cores.
template <WeightFormat F, bool kGateUp, int kTokens, bool kMma>
using WarpKind = std::conditional_t<kMma, Int4MmaWarp<kGateUp>,
                                    DecodeWarp<F, kGateUp, PieceShape<F, kGateUp, kTokens>::kRows,
                                               PieceShape<F, kGateUp, kTokens>::kVecs,
                                               PieceShape<F, kGateUp, kTokens>::kDepth, kTokens>>;

// After the dependency wait: the routed experts' entries of the block's table, from the route
// stage's outputs in scratch, all clamped (see clamp_index). Returns the active entries' end.
// Every routed entry is filled, not just the active ones: under a running forward whose
// scratch is overwritten (the bugs scratch-regrow reproduces) each thread may read another
// active count, and a warp walked entries that no thread had filled (an illegal address, 1
// run in 24, found in a GPU core dump). Past the active ones the list holds -1 (clamped to
// expert 0, never walked). The loads run in parallel, as the active ones' did.
template <WeightFormat F, bool kGateUp, bool kOneToken>
__device__ int fill_routed_entries(const DecodeParams& p, BlockTables& tables) {
  const int S = p.shared, E = p.experts, total = E + S, pairs = p.m * p.slots;
  const int active = detail::clamp_index(__ldcg(p.num_active), S, total);
  for (int i = threadIdx.x; i < E; i += kThreads) {
    const int e = detail::clamp_index(__ldcg(p.active + i), 0, total - 1);
    if constexpr (kOneToken) {
      // Routed entry i is the i-th active expert and holds the pair at sorted position i.
      tables.entries[S + i] = Entry{static_cast<const uint4*>(tables.experts.weights[e]),
                                    F == WeightFormat::int4 ? static_cast<const std::uint16_t*>(tables.experts.scales[e]) : nullptr,
                                    detail::clamp_index(i, 0, pairs - 1), 1};
    } else {
      const int first = detail::clamp_index(__ldcg(p.offsets + e), 0, pairs - 1);
      const int count = detail::clamp_index(__ldcg(p.offsets + e + 1) - first, 1, pairs - first);
      tables.entries[S + i] = Entry{static_cast<const uint4*>(p.weights[e]),
                                    F == WeightFormat::int4 ? static_cast<const std::uint16_t*>(p.scales[e]) : nullptr,
                                    first, count};
    }
  }
  const int routed_pairs = p.m * p.top_k;
  if (kGateUp && !kOneToken)
    for (int i = threadIdx.x; i < routed_pairs && i < kSmemTokens; i += kThreads)
      tables.token_of_pair[i] = detail::clamp_index(__ldcg(p.sorted_pairs + i) / p.slots, 0, p.m - 1);
  __syncthreads();
  return active;
}

template <WeightFormat F, bool kGateUp, int kTokens, bool kMma = false>
__global__ void __launch_bounds__(kThreads, 2) decode_expert_gemm_kernel(DecodeParams p) {
  using Warp = WarpKind<F, kGateUp, kTokens, kMma>;
  // One token (the SIMT kernels at M=1: kTokens is 1 only then): every active routed expert has
  // one pair, its sorted position is its place in the active list, and every pair reads token
  // 0's x row. So after the wait the table needs the active list alone (one L2 round trip, not
  // two: no offsets), with the weight pointers copied to shared memory before the wait.
  constexpr bool kOneToken = kTokens == 1 && !kMma;
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
  if constexpr (kOneToken) {
    for (int e = threadIdx.x; e < E + S; e += kThreads) {
      tables.experts.weights[e] = p.weights[e];
      if constexpr (F == WeightFormat::int4) tables.experts.scales[e] = p.scales[e];
    }
  } else if (kGateUp) {
    for (int i = threadIdx.x; i < S * p.m && routed_pairs + i < kSmemTokens; i += kThreads)
      tables.token_of_pair[routed_pairs + i] = i % p.m;
  }
  __syncthreads();

  Warp w(p, tables, lane, stride);
  const int shared_units = S * p.units;
  if constexpr (kGateUp) {
    // Phase 0: the shared experts, before the wait for the route kernel (a block that starts
    // late, shared_expert_warps, leaves them to the others). Phase 1, after the wait: the
    // routed experts. One call site, in a loop that is not unrolled, so both phases run one
    // copy of the pipeline's code: at one token a copy is 20-odd KB, and a second one was
    // fetched cold after the wait.
#pragma unroll 1
    for (int phase = 0; phase < 2; ++phase) {
      int first, end;
      if (phase == 0) {
        w.stride = p.shared_warps;
        first = warp_id < p.shared_warps ? first_unit_from(0, warp_id, p.shared_warps) : shared_units;
        end = S;
      } else {
        detail::grid_dependency_wait();
        end = fill_routed_entries<F, kGateUp, kOneToken>(p, tables);
        w.stride = stride;
        first = first_unit_from(shared_units, warp_id, stride);
      }
      stream_units(w, first, end);
    }
  } else {
    // down reads h, written by gate_up, so it waits before its first load; but the shared
    // experts' rows it will stream first are known now: pull them into L2 while gate_up's last
    // blocks finish. After the wait, routing (older than gate_up) is complete too, so the
    // table is filled once and one pipeline runs over every expert, with no drain between.
    prefetch_unit_rows(w, first_unit_from(0, warp_id, stride), shared_units);
    detail::grid_dependency_wait();
    const int active = fill_routed_entries<F, kGateUp, kOneToken>(p, tables);
    stream_units(w, first_unit_from(0, warp_id, stride), active);
  }
}

// Warps of a gate_up grid that stream the shared experts. With the cluster route ahead, its
// ranking block holds one SM's registers until it ends: in a grid of every resident block, the
// last block (the scheduler places blocks in index order) starts only then, when the routed
// units are ready, so it skips the shared ones (ForwardOptions::spare_late_block).
int shared_expert_warps(unsigned grid, long long resident, bool spare_late_block) {
  const bool late_block = spare_late_block && grid > 1 && grid >= resident;
  return static_cast<int>(grid - (late_block ? 1 : 0)) * kWarps;
}

// What the forward's options decide about a decode launch.
struct LaunchChoice {
  bool programmatic;      // ForwardOptions::programmatic_launch
  bool spare_late_block;  // the cluster route runs ahead and ForwardOptions::spare_late_block
};

// Launches a decode kernel on the warps its units need (an expert's outputs in units of the
// warp kind's kCols, dealt one a warp), at most every resident block.
template <WeightFormat F, bool kGateUp, int kTokens, bool kMma = false>
void launch_decode_kernel(DecodeParams p, long long max_active, const LaunchChoice& c, cudaStream_t stream) {
  constexpr auto kernel = decode_expert_gemm_kernel<F, kGateUp, kTokens, kMma>;
  p.units = p.out_rows / WarpKind<F, kGateUp, kTokens, kMma>::kCols;  // H % 32 == 0, validated
  const long long resident = detail::resident_blocks<kernel, kThreads>();
  const long long wanted = (max_active * p.units + kWarps - 1) / kWarps;
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min(wanted, resident)));
  p.shared_warps = shared_expert_warps(grid, resident, c.spare_late_block);
  detail::launch(kernel, dim3(grid), dim3(kThreads), 0, stream, c.programmatic,
                 kMma ? "decode_expert_gemm_kernel<int4 mma>" : "decode_expert_gemm_kernel", p);
}

template <WeightFormat F, bool kGateUp>
void launch_decode_format(const DecodeParams& p, long long max_active, const LaunchChoice& c,
                          cudaStream_t stream) {
  // An expert holds at most one pair per token: M bounds the tokens of a pass.
  if (p.m <= 1) return launch_decode_kernel<F, kGateUp, 1>(p, max_active, c, stream);
  if (p.m <= 2) return launch_decode_kernel<F, kGateUp, 2>(p, max_active, c, stream);
  if (p.m <= 4) return launch_decode_kernel<F, kGateUp, 4>(p, max_active, c, stream);
  launch_decode_kernel<F, kGateUp, 8>(p, max_active, c, stream);
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
  const LaunchChoice c{a.options.programmatic_launch,
                       route_runs_as_cluster(a) && a.options.spare_late_block};
  if (d.format == WeightFormat::bf16)
    launch_decode_format<WeightFormat::bf16, kGateUp>(p, max_active, c, stream);
  else if (int4_decode_on_tensor_cores(a.m, a.options.int4_decode) &&
           p.out_rows % Int4MmaWarp<kGateUp>::kCols == 0)
    launch_decode_kernel<WeightFormat::int4, kGateUp, Int4MmaWarp<kGateUp>::kChunk, true>(p, max_active, c,
                                                                                         stream);
  else
    launch_decode_format<WeightFormat::int4, kGateUp>(p, max_active, c, stream);
}

}  // namespace

void enqueue_gate_up_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<true>(a, l, stream);
}

void enqueue_down_decode(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_decode<false>(a, l, stream);
}

}  // namespace moe::kernels
