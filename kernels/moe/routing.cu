// Stage 1 of the forward: router logits, top-k with weights, and grouping of (token, slot)
// pairs by expert: the route's kernels and their launch. What they compute lives beside them:
// the logits in route_logits.cuh, the top-k and weights in route_ranking.cuh, the grouping in
// route_grouping.cuh.
//
// Grid (ceil(E / 16), ceil(m / 8)) from two tokens, (E, 1) at one: a block computes 16 experts'
// logits (one expert's at one token) for a tile of 8 tokens, its 8 warps splitting H (tensor
// cores from sm_80 and two tokens, partial sums added in warp order, so the result does not
// depend on scheduling). The last block to finish a token tile (counter per tile) ranks that
// tile's tokens (rank_tile: top-k ids, then a warp a token for the weights); the last tile to
// finish (global counter) groups all pairs, in one kernel, so a decode step pays one launch
// for all of routing. From kGroupInGridFromTokens tokens two grouping kernels over the grid
// group instead. Counters are zeroed by a memset node before the kernel.
//
// Ahead of the decode kernels (m <= decode_max_tokens) on sm_90+, one cluster of
// kClusterBlocks blocks instead (route_cluster_kernel): each block computes the logits of
// E / kClusterBlocks experts into block 0's shared memory, one cluster barrier, and block 0
// ranks and groups with the logits, top-k ids and membership words in shared memory
// (group_decode_pairs). No memset node, no fences, no counter atomics, no re-reads of the ids
// from L2. It is launched programmatically: the router rows (which no earlier kernel writes)
// are loaded into registers (HeldRouterTile, up to 16 rows a block at H <= 2048;
// HeldRouterRows at one token, up to 8) or asked of L2 while the previous layer's combine
// still runs, and it lets gate_up start once its logits are done.
//
// Why this shape (docs/design/kernels.md has the figures): at decode sizes the route is a
// serial chain on the layer's critical path. Ranking by counted ranks (select_top_k: a thread a
// logit) replaces a warp per token picking k times; beyond a thread's one logit (8 tokens of
// E = 128 a tile) the rounds, from shared memory, are cheaper and run instead (rank_tile).
//
// The ranking block's code after the logits runs once a layer on one SM, so its instructions
// are fetched cold while gate_up's shared experts load the memory system (a per-warp trace put
// the first run of the top-k and weights at several times a second run). So that code is kept
// small: loops over a lane's logits or a thread's experts are not unrolled, no register array is
// indexed by them, one token groups in one phase beside the weighing (group_one_token), and
// one token has a kernel of its own (route_cluster_kernel<true>: 36 KB of SASS where the
// general one has 88), so the ranking block fetches only that path's code.
#include <cooperative_groups.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "common/cuda_check.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/launch.cuh"
#include "kernels/moe/route_grouping.cuh"
#include "kernels/moe/route_grouping_map.hpp"
#include "kernels/moe/route_logits.cuh"
#include "kernels/moe/route_params.cuh"
#include "kernels/moe/route_ranking.cuh"

namespace moe::kernels {

namespace {

using namespace route;

// A block computes the logits of route_block_rows router rows (route_logits.cuh: a tile on
// tensor cores, or one row) for its token tile; kRich: the routing of real configs
// (route_token_rich), where router row E is the shared gate's (its sigmoid to shared_gate). The
// plain instantiation is the fast path. kGrid (route_groups_in_grid): the grouping kernels that
// follow place the pairs. kShared (route_blocks_share_an_sm): 64 registers a thread, so 4
// blocks share an SM; otherwise one block an SM keeps its registers for loads in flight.
template <bool kRich, bool kGrid, bool kShared>
__global__ void __launch_bounds__(kRouteThreads, kShared ? 4 : 1) route_kernel(RouteParams p) {
  static_assert(kGrid || !kShared, "blocks share an SM only where the grid groups");
  // The expert kernels may be scheduled now; they wait for this grid before reading routing.
  detail::allow_dependent_launch();
  const int t0 = blockIdx.y * kRouteTokens;
  const int tn = min(kRouteTokens, p.m - t0);
  const int rows = p.experts + (kRich && p.shared_gate ? 1 : 0), block_rows = route_block_rows(p.tensor_core_logits);
  const int r0 = static_cast<int>(blockIdx.x) * block_rows;
  logits(p, r0, min(block_rows, rows - r0), t0, tn, [&](int e, int t, float logit) {
    if (kRich && e == p.experts)
      p.shared_gate[t] = 1.0f / (1.0f + expf(-logit));
    else
      p.logits[static_cast<std::size_t>(t) * p.experts + e] = logit;
  });
  // Last expert block of this token tile ranks its tokens.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(p.counters + 1 + blockIdx.y, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The other blocks' logits, read through L2.
  __shared__ TileLogits tile;
  for (int i = threadIdx.x; i < tn * p.experts; i += kRouteThreads)
    tile[i / p.experts][i % p.experts] = __ldcg(p.logits + static_cast<std::size_t>(t0) * p.experts + i);
  __syncthreads();
  if constexpr (kRich) {
    for (int t = threadIdx.x >> 5; t < tn; t += kRouteWarps) route_token_rich(p, tile[t], t0 + t, threadIdx.x & 31);
    if (p.x_pairs) {
      __syncthreads();  // the tile's weights, stored by its warps
      write_pair_inputs(p, t0, tn);
    }
  } else {
    rank_tile(p, tile, t0, tn, nullptr, nullptr);
  }
  if constexpr (kGrid) {  // the grouping kernels that follow place every pair (route_grouping.cuh)
    __syncthreads();       // the tile's top-k ids, stored by its warps
    static_assert(sizeof(TileLogits) >= sizeof(std::uint32_t) * kMaxTotalExperts, "the masks fit the logits' place");
    write_tile_membership(p, static_cast<int>(blockIdx.y), static_cast<int>(gridDim.y), t0, tn,
                          reinterpret_cast<std::uint32_t*>(&tile[0][0]));
    return;
  }
  // Last tile groups every pair. With one tile (decode sizes) this block is that tile: skip
  // the second round trip to L2.
  if (gridDim.y > 1) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(p.counters, 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
  } else {
    __syncthreads();  // this block's top-k stores are visible to its own threads
  }
  group_pairs(p);
}

// The instantiation of route_kernel for a forward (shared_sm only where in_grid).
template <bool kRich>
auto route_kernel_for(bool in_grid, bool shared_sm) {
  if (shared_sm) return route_kernel<kRich, true, true>;
  return in_grid ? route_kernel<kRich, true, false> : route_kernel<kRich, false, false>;
}

// The grouping over the grid (route_groups_in_grid), after route_kernel: a warp an expert sums
// its membership words, then every block places its share of the pairs.
static_assert(kGroupWordsWarps * 32 == kGroupThreads && kGroupThreads == kRouteThreads,
              "place_experts scans with kRouteThreads threads");
__global__ void __launch_bounds__(kGroupThreads) route_group_words_kernel(RouteParams p) {
  const int e = static_cast<int>(blockIdx.x) * kGroupWordsWarps + static_cast<int>(threadIdx.x >> 5);
  if (e < p.experts + p.shared) prefix_membership_words(p, e);
}
__global__ void __launch_bounds__(kGroupThreads) route_group_pairs_kernel(RouteParams p) { place_grouped_pairs(p); }

// Ahead of the decode kernels (m <= kRouteTokens), one cluster: block b computes the logits of
// experts [b * per_block, (b + 1) * per_block) into block 0's shared memory; block 0 ranks and
// groups. kOneToken (m == 1, decode's commonest case) is a kernel of its own: its logits loop
// once over the tokens, it keeps no membership words and groups with group_one_token, so the
// code the ranking block fetches cold after its wait is only that path's.
// Clusters exist from sm_90: older device passes compile an empty kernel (never launched there:
// enqueue_route checks the device) without the attribute, which they reject.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define MOE_ROUTE_CLUSTER_DIMS __cluster_dims__(kClusterBlocks, 1, 1)
#else
#define MOE_ROUTE_CLUSTER_DIMS
#endif
template <bool kOneToken>
__global__ void MOE_ROUTE_CLUSTER_DIMS __launch_bounds__(kRouteThreads) route_cluster_kernel(RouteParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();
#else
  namespace cg = cooperative_groups;
  constexpr int kTokens = kOneToken ? 1 : kRouteTokens;
  const int m = kOneToken ? 1 : p.m;
  __shared__ TileLogits s_logits;
  __shared__ int s_selected[kTokens * kMaxTopK];  // a token's top-k ids in rank order
  const cg::cluster_group cluster = cg::this_cluster();
  // Block 0's shared memory may be written only once block 0 runs: arrive now, wait before the
  // first remote store (racecheck: "located in a block that might not have entered yet").
  auto started = cluster.barrier_arrive();
  const int block = static_cast<int>(cluster.block_rank());
  const int per_block = (p.experts + kClusterBlocks - 1) / kClusterBlocks;
  const int first = block * per_block;
  const int count = max(0, min(per_block, p.experts - first));
  // No earlier kernel writes the router: bring this block's rows into registers (or L2)
  // while the previous kernel (the last layer's combine) finishes. x and scratch only after the wait: the
  // previous layer's kernels read this scratch and write x.
  // One token sums on the SIMT path (logits_on_tensor_cores), from two on the tensor-core tile.
  using HeldRows = std::conditional_t<kOneToken, HeldRouterRows, HeldRouterTile>;
  const bool held = p.hold_router_rows && HeldRows::fits(p, count);
  HeldRows rows;
  if (held) {
    rows.load(p, first, count);
  } else {
    const char* bytes = reinterpret_cast<const char*>(p.router + static_cast<std::size_t>(first) * p.hidden);
    const int lines = static_cast<int>((static_cast<std::size_t>(count) * p.hidden * 2 + 127) / 128);
    for (int i = threadIdx.x; i < lines; i += kRouteThreads) detail::prefetch_l2(bytes + static_cast<std::size_t>(i) * 128);
  }
  __shared__ std::uint32_t s_membership[kOneToken ? 1 : kMaxTotalExperts];
  if (!kOneToken && block == 0) init_decode_membership(p, s_membership);  // before weigh_token's bits: cluster.sync orders them
  detail::grid_dependency_wait();
  cluster.barrier_wait(std::move(started));
  float* logits0 = cluster.map_shared_rank(&s_logits[0][0], 0);
  const auto store = [&](int e, int t, float logit) {
    p.logits[static_cast<std::size_t>(t) * p.experts + e] = logit;
    logits0[t * kLogitsStride + e] = logit;
  };
  if (held)
    rows.logits(p, m, first, count, store);
  else if (kOneToken)
    for (int e0 = first; e0 < first + count; e0 += kLogitExperts)
      block_logits<kLogitExperts, 1>(p, e0, min(kLogitExperts, first + count - e0), 0, 1, store);
  else if (count > 0)
    logits(p, first, count, 0, m, store);
  cluster.sync();  // every block's logits are in block 0's shared memory
  // Only now may gate_up be scheduled: it reads x (complete: this grid has waited) and then
  // streams the shared experts while block 0 ranks and groups. Earlier, its stream would slow
  // the logits' loads, which gate_up's routed experts wait for (traced: 4 us vs 8 us).
  detail::allow_dependent_launch();
  if (block != 0) return;
  // rank_tile's phases; at one token the grouping runs beside the weighing (warp 0).
  select_tile(p, s_logits, m, s_selected);
  __syncthreads();
  if constexpr (kOneToken) {
    if (threadIdx.x < 32) weigh_token(p, s_logits, s_selected, 0, 0, threadIdx.x, nullptr, nullptr);
    group_one_token(p, s_selected);
  } else {
    __shared__ int s_ids[kRouteTokens * kMaxTopK];
    for (int t = threadIdx.x >> 5; t < m; t += kRouteWarps)
      weigh_token(p, s_logits, s_selected, t, 0, threadIdx.x & 31, s_ids, s_membership);
    __syncthreads();
    group_decode_pairs(p, s_ids, s_membership);
  }
#endif
}
#undef MOE_ROUTE_CLUSTER_DIMS

}  // namespace

bool route_runs_as_cluster(const MoeForwardArgs& a) {
  // The cluster route computes plain routing only: a shape with real configs' routing takes
  // route_kernel<kRich = true, ...> on either path.
  return a.dims.plain_routing() && a.m <= kRouteTokens && a.options.cluster_route && current_device_sm() >= 90 &&
         resolve_forward_path(a) == ForwardPath::decode;
}

void enqueue_route(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  const MoeDims& d = a.dims;
  RouteParams p{};
  p.x = a.x;
  p.router = a.router;
  p.bias = a.router_bias;
  p.m = a.m;
  p.hidden = d.hidden;
  p.experts = d.experts;
  p.shared = d.shared;
  p.top_k = d.top_k;
  p.bit_words = l.bit_words;
  p.softmax = d.scoring == Scoring::softmax;
  p.renormalize = d.renormalize;
  p.telemetry = a.telemetry;
  if (a.telemetry.armed() && a.telemetry.experts != d.experts)
    throw Error(ExitCode::probe_error, "enqueue_route: telemetry record for " + std::to_string(a.telemetry.experts) +
                                           " experts, the layer has " + std::to_string(d.experts));
  void* s = a.scratch;
  p.logits = l.at<float>(s, l.logits);
  p.topk_ids = l.at<int>(s, l.topk_ids);
  p.topk_weights = l.at<float>(s, l.topk_weights);
  p.counts = l.at<int>(s, l.expert_counts);
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.num_active = l.at<int>(s, l.num_active);
  p.active = l.at<int>(s, l.active_experts);
  p.num_tiles = l.at<int>(s, l.num_tiles);
  p.tiles = l.at<int2>(s, l.tiles);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.pair_position = l.at<int>(s, l.pair_position);
  p.membership = l.at<std::uint32_t>(s, l.membership);
  p.membership_prefix = l.at<int>(s, l.membership_prefix);
  p.counters = l.at<unsigned int>(s, l.done_counters);
  p.select = a.options.top_k_select;
  p.hold_router_rows = a.options.hold_router_rows;
  p.tensor_core_logits = logits_on_tensor_cores(a.m, current_device_sm());
  p.selection_bias = a.selection_bias;
  p.grouped = d.grouped();
  p.n_group = d.n_group;
  p.topk_group = d.topk_group;
  p.group_top2 = d.topk_method == TopKMethod::noaux_tc;
  p.routed_scaling = d.routed_scaling;
  p.shared_gate = d.shared_gate ? l.at<float>(s, l.shared_gate) : nullptr;
  p.x_pairs = d.scale_input ? l.at<__nv_bfloat16>(s, l.x_pairs) : nullptr;
  if (d.total_experts() > kMaxTotalExperts)
    throw Error(ExitCode::probe_error, "enqueue_route: experts + shared " + std::to_string(d.total_experts()) +
                                           " above " + std::to_string(kMaxTotalExperts));
  // The cluster pays off through its overlap with the decode gate_up (launched programmatically
  // behind it). Ahead of the tensor-core kernels (m 5..8 in bf16) its 8 blocks
  // computing all the logits lost to the E-block route (H200: qwen3-30b-a3b bf16 M=8 +8%).
  if (route_runs_as_cluster(a)) {
    if (a.m == 1)
      detail::launch(route_cluster_kernel<true>, dim3(kClusterBlocks), dim3(kRouteThreads), 0, stream,
                     a.options.programmatic_launch, "route_cluster_kernel<one token>", p);
    else
      detail::launch(route_cluster_kernel<false>, dim3(kClusterBlocks), dim3(kRouteThreads), 0, stream,
                     a.options.programmatic_launch, "route_cluster_kernel", p);
    return;
  }
  MOE_CUDA_CHECK(cudaMemsetAsync(p.counters, 0, sizeof(unsigned int) * (1 + l.route_tiles), stream));
  const int block_rows = route_block_rows(p.tensor_core_logits);
  const dim3 grid((d.router_rows() + block_rows - 1) / block_rows, l.route_tiles);
  if (grid.y > 65535)
    throw Error(ExitCode::probe_error, "enqueue_route: m " + std::to_string(a.m) + " too large");
  const bool in_grid = route_groups_in_grid(a.m);
  const bool shared_sm = in_grid && route_blocks_share_an_sm(static_cast<long long>(grid.x) * grid.y,
                                                             current_device_multiprocessors());
  if (d.plain_routing()) {
    route_kernel_for<false>(in_grid, shared_sm)<<<grid, kRouteThreads, 0, stream>>>(p);
    MOE_CHECK_LAUNCH("route_kernel");
  } else {
    if (d.grouped() && (d.n_group < 1 || d.n_group > 32 || d.experts % d.n_group != 0 || d.topk_group < 1 ||
                        d.topk_group > d.n_group || d.topk_group * (d.experts / d.n_group) < d.top_k))
      throw Error(ExitCode::probe_error, "enqueue_route: n_group " + std::to_string(d.n_group) + ", topk_group " +
                                             std::to_string(d.topk_group) + " do not fit experts " +
                                             std::to_string(d.experts) + ", top_k " + std::to_string(d.top_k));
    if (d.selection_bias() && !p.selection_bias)
      throw Error(ExitCode::probe_error, "enqueue_route: noaux_tc needs the selection bias");
    route_kernel_for<true>(in_grid, shared_sm)<<<grid, kRouteThreads, 0, stream>>>(p);
    MOE_CHECK_LAUNCH("route_kernel<routing of real configs>");
  }
  if (in_grid) {
    const int words_blocks = (d.total_experts() + kGroupWordsWarps - 1) / kGroupWordsWarps;
    route_group_words_kernel<<<words_blocks, kGroupThreads, 0, stream>>>(p);
    MOE_CHECK_LAUNCH("route_group_words_kernel");
    const long long pairs = static_cast<long long>(a.m) * (d.top_k + d.shared);
    const auto pairs_blocks = static_cast<unsigned>((pairs + kGroupPairsPerBlock - 1) / kGroupPairsPerBlock);
    route_group_pairs_kernel<<<pairs_blocks, kGroupThreads, 0, stream>>>(p);
    MOE_CHECK_LAUNCH("route_group_pairs_kernel");
  }
}

void preload_route_kernels() {
  detail::load_kernel(route_kernel<false, false, false>, "route_kernel");
  detail::load_kernel(route_kernel<true, false, false>, "route_kernel<routing of real configs>");
  detail::load_kernel(route_kernel<false, true, false>, "route_kernel<grouped over the grid>");
  detail::load_kernel(route_kernel<true, true, false>, "route_kernel<routing of real configs, grouped over the grid>");
  detail::load_kernel(route_kernel<false, true, true>, "route_kernel<grouped over the grid, 4 blocks an SM>");
  detail::load_kernel(route_kernel<true, true, true>,
                      "route_kernel<routing of real configs, grouped over the grid, 4 blocks an SM>");
  detail::load_kernel(route_group_words_kernel, "route_group_words_kernel");
  detail::load_kernel(route_group_pairs_kernel, "route_group_pairs_kernel");
  if (current_device_sm() < 90) return;  // thread-block clusters: route_runs_as_cluster
  detail::load_kernel(route_cluster_kernel<true>, "route_cluster_kernel<one token>");
  detail::load_kernel(route_cluster_kernel<false>, "route_cluster_kernel");
}

}  // namespace moe::kernels
