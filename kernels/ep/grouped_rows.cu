// The expert-parallel compute on received rows through the forward's expert GEMM stages
// (ForwardOptions::ep_compute = grouped): the records become a batch of tokens and the
// route stage's outputs for it (received_grouping.hpp has the index math), gate_up and down
// run on that batch as on a device's own tokens, and each record's combine row is its slots'
// weighted sum. Every output element has one writer and a fixed order; the order of pairs
// comes from ballots and prefix sums, never from atomics.
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/ep/received_grouping.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels::ep {

namespace {

constexpr std::size_t kAlign = 256;
constexpr int kMaxTopK = 32;          // a record's slots in the combine kernel's shared memory
constexpr int kUnpackThreads = 128;
constexpr int kGroupThreads = 1024;   // one block groups the whole batch
constexpr int kCombineThreads = 256;

std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

struct UnpackParams {
  WireGeometry wire;
  int local_experts;
  const unsigned char* recv;
  const int* stale_counts;
  unsigned* status;
  int* slot_expert;      // [rows, k] (the batch's topk_ids)
  float* slot_weight;    // [rows, k] (the batch's topk_weights)
  uint4* x;              // [rows, H / 8]
};

// The meaningful records of block s (-1: an impossible count).
__device__ int block_records(const WireGeometry& g, const unsigned char* recv, const int* stale_counts, int s) {
  const int header = reinterpret_cast<const int*>(recv + g.dispatch_block_bytes * s)[0];
  return valid_record_count(stale_counts ? stale_counts[s] : header, g.capacity);
}

// Block (r, s): record r of receive block s, batch token s * capacity + r. Every token's slots
// are written every step (a place without a record has no pair), so nothing of an earlier
// step is read; only a record's input row is copied.
__global__ void __launch_bounds__(kUnpackThreads) unpack_records_kernel(UnpackParams p) {
  const int r = blockIdx.x, s = blockIdx.y, K = p.wire.top_k;
  const int count = block_records(p.wire, p.recv, p.stale_counts, s);
  if (count < 0 && r == 0 && threadIdx.x == 0) atomicOr(p.status, kBadCount);
  const int t = received_token(s, r, p.wire.capacity);
  int* ids = p.slot_expert + static_cast<std::size_t>(t) * K;
  float* weights = p.slot_weight + static_cast<std::size_t>(t) * K;
  if (r >= count) {
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      ids[k] = -1;
      weights[k] = 0.0f;
    }
    return;
  }
  const unsigned char* rec = p.recv + p.wire.dispatch_block_bytes * s + p.wire.header_bytes +
                             p.wire.dispatch_row_bytes * r;
  if (threadIdx.x == 0) {
    const int* experts = reinterpret_cast<const int*>(rec + 4);
    const float* w = reinterpret_cast<const float*>(rec + 4 + 4 * K);
    bool bad = false;
    for (int k = 0; k < K; ++k) {
      ids[k] = slot_local_expert(experts, k, p.local_experts, &bad);
      weights[k] = w[k];
    }
    if (bad) atomicOr(p.status, kBadExpert);
  }
  const int vecs = p.wire.hidden / 8;
  const uint4* src = reinterpret_cast<const uint4*>(rec + p.wire.meta_bytes);
  uint4* dst = p.x + static_cast<std::size_t>(t) * vecs;
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) dst[i] = src[i];
}

struct GroupParams {
  int rows, top_k, experts, words;
  const int* slot_expert;        // [rows, k]
  std::uint32_t* membership;     // [E, words]
  int* membership_prefix;        // [E, words]
  int* counts;                   // [E]
  int* offsets;                  // [E + 1]
  int* num_active;
  int* active;                   // [E]
  int* num_tiles;
  int2* tiles;
  int* sorted_pairs;             // [rows * k]
  int* pair_position;            // [rows * k]
};

// One block: the route stage's grouping outputs for the batch (group_received_host's values).
// Global memory between the phases: a __syncthreads orders the block's writes and reads.
__global__ void __launch_bounds__(kGroupThreads) group_received_kernel(GroupParams p) {
  __shared__ int s_num_active;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int K = p.top_k, E = p.experts, W = p.words, pairs = p.rows * K;
  // 1. Membership words. A warp owns whole words (its lanes are the word's 32 tokens): it
  // zeroes them, then slot by slot the lanes holding one expert (match_any) set their bits
  // through the lowest of them, one writer a word a step, the steps ordered by __syncwarp.
  for (int w = warp; w < W; w += warps) {
    for (int e = lane; e < E; e += 32) p.membership[e * W + w] = 0u;
    __syncwarp();
    const int t = w * 32 + lane;
    for (int k = 0; k < K; ++k) {
      const int e = t < p.rows ? p.slot_expert[t * K + k] : -1;
      const unsigned same = __match_any_sync(0xffffffffu, e);
      if (e >= 0 && e < E && lane == __ffs(same) - 1) p.membership[e * W + w] |= same;
      __syncwarp();
    }
  }
  __syncthreads();
  // 2. Per expert: the tokens before each word, and its count.
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int run = 0;
    for (int w = 0; w < W; ++w) {
      p.membership_prefix[e * W + w] = run;
      run += popcount32(p.membership[e * W + w]);
    }
    p.counts[e] = run;
  }
  __syncthreads();
  // 3. Warp 0, experts in ascending order 32 at a time: offsets, the active list, the tiles.
  if (warp == 0) {
    int base_off = 0, base_act = 0, base_tiles = 0;
    for (int e0 = 0; e0 < E; e0 += 32) {
      const int e = e0 + lane;
      const int c = e < E ? p.counts[e] : 0;
      const int act = c > 0;
      const int tl = tiles_of(c, kTensorCoreTileRows);
      const int ic = detail::warp_inclusive_scan(c, lane);
      const int ia = detail::warp_inclusive_scan(act, lane);
      const int it = detail::warp_inclusive_scan(tl, lane);
      if (e < E) {
        const int off = base_off + ic - c;
        p.offsets[e] = off;
        if (act) p.active[base_act + ia - 1] = e;
        const int tb = base_tiles + it - tl;
        for (int i = 0; i < tl; ++i) p.tiles[tb + i] = make_int2(e, off + i * kTensorCoreTileRows);
      }
      base_off += __shfl_sync(0xffffffffu, ic, 31);
      base_act += __shfl_sync(0xffffffffu, ia, 31);
      base_tiles += __shfl_sync(0xffffffffu, it, 31);
    }
    if (lane == 0) {
      p.offsets[E] = base_off;
      *p.num_active = base_act;
      *p.num_tiles = base_tiles;
      s_num_active = base_act;
    }
  }
  __syncthreads();
  // 4. Past the active experts the list holds -1; each pair finds its place; past the last
  // pair the sorted list holds -1 (the GEMMs read positions up to rows * k, walk none there).
  for (int a = s_num_active + threadIdx.x; a < E; a += blockDim.x) p.active[a] = -1;
  const int total = p.offsets[E];
  for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
    const int e = p.slot_expert[i];
    if (e < 0 || e >= E) {
      p.pair_position[i] = -1;
      continue;
    }
    const int t = i / K, word = e * W + t / 32;
    const int pos = grouped_position(p.offsets[e], p.membership_prefix[word], p.membership[word], t);
    p.sorted_pairs[pos] = i;
    p.pair_position[i] = pos;
  }
  for (int i = total + threadIdx.x; i < pairs; i += blockDim.x) p.sorted_pairs[i] = -1;
}

struct CombineRowsParams {
  WireGeometry wire;
  const unsigned char* recv;
  const int* stale_counts;
  const int* pair_position;  // [rows, k]
  const float* slot_weight;  // [rows, k]
  const float* down_out;     // [pairs, H], sorted order
  unsigned char* combine_send;
};

// Block (r, s): record r of block s, its combine row in the same record of the same block.
__global__ void __launch_bounds__(kCombineThreads) combine_rows_kernel(CombineRowsParams p) {
  __shared__ int s_pos[kMaxTopK];
  __shared__ float s_w[kMaxTopK];
  const int r = blockIdx.x, s = blockIdx.y, K = p.wire.top_k, H = p.wire.hidden;
  if (r >= block_records(p.wire, p.recv, p.stale_counts, s)) return;  // also an impossible count
  const int t = received_token(s, r, p.wire.capacity);
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    s_pos[k] = p.pair_position[t * K + k];
    s_w[k] = p.slot_weight[t * K + k];
  }
  __syncthreads();
  float* partial = reinterpret_cast<float*>(p.combine_send + p.wire.combine_block_bytes * s + p.wire.header_bytes +
                                            p.wire.combine_row_bytes * r);
  for (int n = threadIdx.x; n < H; n += blockDim.x) {
    float acc = 0.0f;  // slots in order, as the per-row kernel
    for (int k = 0; k < K; ++k)
      if (s_pos[k] >= 0) acc += s_w[k] * p.down_out[static_cast<std::size_t>(s_pos[k]) * H + n];
    partial[n] = acc;
  }
}

[[noreturn]] void bad(const std::string& what) {
  throw Error(ExitCode::usage, "expert-parallel grouped rows: " + what);
}

}  // namespace

void preload_grouped_rows_kernels() {
  detail::load_kernel(unpack_records_kernel, "unpack_records_kernel");
  detail::load_kernel(group_received_kernel, "group_received_kernel");
  detail::load_kernel(combine_rows_kernel, "combine_rows_kernel");
}

GroupedRowsLayout grouped_rows_layout(const MoeDims& layer, const WireGeometry& wire, int local_experts) {
  GroupedRowsLayout l;
  MoeDims& b = l.batch;
  b.hidden = layer.hidden;
  b.inter = layer.inter;
  b.experts = local_experts;
  b.shared = 0;  // the shared experts run on a rank's own tokens
  b.top_k = layer.top_k;
  b.format = layer.format;  // routing fields stay plain: the records carry the routing
  l.rows = received_batch_rows(wire);
  l.forward = scratch_layout(b, l.rows);
  l.x = align_up(l.forward.total);
  l.total = align_up(l.x + std::size_t{2} * l.rows * layer.hidden);
  return l;
}

MoeForwardArgs grouped_batch_args(const GroupedRowsArgs& a, const GroupedRowsLayout& l) {
  MoeForwardArgs b;
  b.dims = l.batch;
  b.m = l.rows;
  b.x = reinterpret_cast<const __nv_bfloat16*>(static_cast<const char*>(a.scratch) + l.x);
  b.experts = a.experts;
  b.scratch = a.scratch;
  b.scratch_bytes = l.forward.total;
  b.options = a.options;
  b.options.down_rows = DownRows::fp32;  // combine_rows_kernel reads down's rows as fp32
  return b;
}

void enqueue_grouped_rows(const GroupedRowsArgs& a, cudaStream_t stream) {
  const MoeDims& d = a.dims;
  if (d.hidden % 32 != 0 || d.inter % 32 != 0) bad("hidden and inter must be multiples of 32");
  if (d.top_k < 1 || d.top_k > kMaxTopK) bad("top_k must be in [1, " + std::to_string(kMaxTopK) + "]");
  if (d.top_k != a.wire.top_k || d.hidden != a.wire.hidden) bad("the wire's top_k and hidden are not the layer's");
  if (d.scale_input) bad("a routed expert input scaled by its weight (Llama-4) is not supported");
  if (a.local_experts < 1) bad("a rank needs at least one expert");
  if (!a.experts.gate_up || !a.experts.down) bad("the expert table is null");
  if (d.format == WeightFormat::int4 && (!a.experts.gate_up_scales || !a.experts.down_scales))
    bad("int4 weights need their scale tables");
  if (const std::string m = weight_layout_mismatch(d, a.experts, a.options); !m.empty()) bad(m);
  const GroupedRowsLayout l = grouped_rows_layout(d, a.wire, a.local_experts);
  if (!a.scratch || a.scratch_bytes < l.total)
    bad("scratch of " + std::to_string(a.scratch_bytes) + " bytes, " + std::to_string(l.total) + " needed");
  if (reinterpret_cast<std::uintptr_t>(a.scratch) % kAlign != 0) bad("scratch must be 256-byte aligned");
  const ScratchLayout& f = l.forward;
  void* s = a.scratch;
  const dim3 records(a.wire.capacity, a.wire.ranks);

  UnpackParams u{};
  u.wire = a.wire;
  u.local_experts = a.local_experts;
  u.recv = a.recv;
  u.stale_counts = a.stale_counts;
  u.status = a.status;
  u.slot_expert = f.at<int>(s, f.topk_ids);
  u.slot_weight = f.at<float>(s, f.topk_weights);
  u.x = reinterpret_cast<uint4*>(static_cast<char*>(s) + l.x);
  unpack_records_kernel<<<records, kUnpackThreads, 0, stream>>>(u);
  MOE_CHECK_LAUNCH("unpack_records_kernel");

  GroupParams g{};
  g.rows = l.rows;
  g.top_k = d.top_k;
  g.experts = a.local_experts;
  g.words = membership_words(l.rows);
  g.slot_expert = u.slot_expert;
  g.membership = f.at<std::uint32_t>(s, f.membership);
  g.membership_prefix = f.at<int>(s, f.membership_prefix);
  g.counts = f.at<int>(s, f.expert_counts);
  g.offsets = f.at<int>(s, f.expert_offsets);
  g.num_active = f.at<int>(s, f.num_active);
  g.active = f.at<int>(s, f.active_experts);
  g.num_tiles = f.at<int>(s, f.num_tiles);
  g.tiles = f.at<int2>(s, f.tiles);
  g.sorted_pairs = f.at<int>(s, f.sorted_pairs);
  g.pair_position = f.at<int>(s, f.pair_position);
  group_received_kernel<<<1, kGroupThreads, 0, stream>>>(g);
  MOE_CHECK_LAUNCH("group_received_kernel");

  const MoeForwardArgs batch = grouped_batch_args(a, l);
  enqueue_expert_gemms(batch, f, resolve_forward_path(batch), stream);

  CombineRowsParams c{};
  c.wire = a.wire;
  c.recv = a.recv;
  c.stale_counts = a.stale_counts;
  c.pair_position = g.pair_position;
  c.slot_weight = u.slot_weight;
  c.down_out = f.at<float>(s, f.down_out);
  c.combine_send = a.combine_send;
  combine_rows_kernel<<<records, kCombineThreads, 0, stream>>>(c);
  MOE_CHECK_LAUNCH("combine_rows_kernel");
}

}  // namespace moe::kernels::ep
