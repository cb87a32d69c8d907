#pragma once
// The grid every streamed expert GEMM runs (the decode kernels, expert_gemm_decode.cu, and the
// mma family, expert_gemm_mma.cu): the block tables, the order of shared and routed experts
// under programmatic dependent launch, and the launch over the warps the units need. A warp
// kind (decode_warp.cuh, int4_mma_warp.cuh, expert_mma_warp.cuh) says how a piece is loaded
// and multiplied; decode_walk.cuh how pieces are dealt and streamed.
#include <algorithm>
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/decode_walk.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels::decode {

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

// The body of a streamed expert GEMM kernel for warp kind Warp. kOneToken: every active routed
// expert has one pair, its sorted position is its place in the active list, and every pair
// reads token 0's x row. So after the wait the table needs the active list alone (one L2 round
// trip, not two: no offsets), with the weight pointers copied to shared memory before the wait.
template <class Warp, WeightFormat F, bool kGateUp, bool kOneToken>
__device__ __forceinline__ void run_streamed_grid(const DecodeParams& p) {
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
inline int shared_expert_warps(unsigned grid, long long resident, bool spare_late_block) {
  const bool late_block = spare_late_block && grid > 1 && grid >= resident;
  return static_cast<int>(grid - (late_block ? 1 : 0)) * kWarps;
}

// What the forward's options decide about a decode launch.
struct LaunchChoice {
  bool programmatic;      // ForwardOptions::programmatic_launch
  bool spare_late_block;  // the cluster route runs ahead and ForwardOptions::spare_late_block
};

// Launches `kernel` (warp kind Warp) on the warps its units need (an expert's outputs in
// units of the warp kind's kCols, dealt one a warp), at most every resident block.
template <auto kernel, class Warp>
void launch_streamed_grid(DecodeParams p, long long max_active, const LaunchChoice& c, cudaStream_t stream,
                          const char* name) {
  p.units = p.out_rows / Warp::kCols;  // H % 32 == 0, validated
  const long long resident = detail::resident_blocks<kernel, kThreads>();
  const long long wanted = (max_active * p.units + kWarps - 1) / kWarps;
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min(wanted, resident)));
  p.shared_warps = shared_expert_warps(grid, resident, c.spare_late_block);
  detail::launch(kernel, dim3(grid), dim3(kThreads), 0, stream, c.programmatic, name, p);
}

// Loads a streamed kernel and primes launch_streamed_grid's occupancy cache for it.
template <auto kernel>
void preload_streamed_kernel(const char* name) {
  detail::load_kernel(kernel, name);
  detail::resident_blocks<kernel, kThreads>();
}

// A streamed kernel's parameters for the forward's args (units and shared warps are set at
// launch), the worst case of its active experts and the launch choice.
template <bool kGateUp>
DecodeParams streamed_params(const MoeForwardArgs& a, const ScratchLayout& l) {
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
  return p;
}

// Worst case of active experts: every routed one any pair could pick, plus the shared ones.
inline long long max_active_experts(const MoeForwardArgs& a) {
  return std::min<long long>(a.dims.experts, static_cast<long long>(a.m) * a.dims.top_k) + a.dims.shared;
}

inline LaunchChoice launch_choice(const MoeForwardArgs& a) {
  return {a.options.programmatic_launch, route_runs_as_cluster(a) && a.options.spare_late_block};
}

}  // namespace moe::kernels::decode
