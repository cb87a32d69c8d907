// GPU checks of the MoE forward: every stage and the whole layer against the float64 CPU
// reference (kernels/moe/reference.hpp), on fresh inputs each case (seed printed; set
// MOE_TEST_SEED to replay), outputs and scratch poisoned with 0xFF (NaN) before every run.
//
// Error bounds (and why):
//  * logits: |gpu - ref| <= 1e-4 absolute. fp32 accumulation over H <= 7168 bf16 products of
//    size ~1/sqrt(H) errs by ~1e-6; 1e-4 leaves two orders of margin.
//  * routing: GPU top-k must equal the reference's, except at near-ties: where the reference
//    logits of the two experts involved are within 2e-4 (twice the logit bound) either choice
//    is right; the reference then follows the GPU's choice. Near-ties are counted and printed.
//  * top-k weights: |gpu - ref(gpu ids)| <= 1e-4 (fp32 exp of fp32 logits), times
//    routed_scaling where a config scales them.
//  * routing of real configs (docs/configs.md): a grouped choice may differ only where the
//    reference's margin at the group cut or the expert cut (choice units: scores + bias) is
//    within 2e-4; the shared gate |gpu - ref| <= 1e-4 (a sigmoid of an fp32 logit); Llama-4's
//    per-pair input rows bf16(x * w) exact, from the GPU's own weight.
//  * grouping (counts, offsets, active list, tiles, sorted pairs, positions): exact.
//  * h = silu(g) * u stored bf16, reference rounded the same way: element bound
//    |d| <= 2^-7 |ref| + a * max|ref| with a = 1e-3 (bf16 weights, fp32 accumulation: only
//    rounding-boundary flips of one bf16 ulp) or 5e-3 for int4, plus per element what the
//    kernel's arithmetic can move it by (fp32 accumulation; on the int4 tensor-core path,
//    q * scale rounded to bf16 in shared memory, 2^-9 relative per weight: see h_arith).
//  * down output (fp32) from the GPU's own h: element bound 1e-4 * max|ref| for bf16 and the
//    int4 decode path (fp32 vs float64 accumulation only), 1e-2 * max|ref| for int4 on the
//    tensor-core path (bf16-rounded dequantised weights).
//  * combine (bf16 out) from the GPU's own down outputs and weights: |d| <= 2^-8 |ref| + 1e-7
//    per element (one bf16 rounding; fp32 summation order can move it by one ulp).
//  * whole layer vs the independent reference: ||out - ref|| / ||ref|| < 1e-2 for bf16 (the
//    bf16 output rounding alone gives ~1.1e-3, h flips add less) and < 2e-2 for int4; plus
//    max |d| <= 5e-2 * max|ref| so a lost column or token cannot hide in the norm.
// Large shapes at large M: the CPU reference for every token would take minutes, so a sample
// of tokens is checked there (first, last and random ones; the count is printed). Grouping,
// NaN poisoning and determinism are checked on every token.
//
// MOE_TEST_M=1,2,3,5,64 runs the forward tests at those M only (compute-sanitizer runs: the
// tools slow every kernel 10-100x; those M still reach every kernel instantiation); the
// chained-layers case takes the ones up to 8. MOE_TEST_SHAPES=name,... narrows the route
// comparisons' shapes (route_test_shapes) and the mma family's model shapes. MOE_TEST_REPEAT=0
// leaves out the determinism check's second run (under a sanitizer: the same launches again).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/shape.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/bf16_stream_layout.hpp"
#include "kernels/moe/device_math.cuh"
#include "kernels/moe/forward.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/generator.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_layout.hpp"
#include "kernels/moe/int4_stream_layout.hpp"
#include "kernels/moe/reference.hpp"
#include "support/gpu_test.hpp"
#include "support/test_env.hpp"

using namespace moe::kernels;

namespace {

// ---------------------------------------------------------------- device memory helpers
using moe::DeviceBuffer;

// One cudaMalloc per buffer, through the engine's allocator (which owns every device free).
DeviceBuffer device_buffer(std::size_t bytes) {
  static moe::DeviceAllocator allocator(moe::DeviceAllocator::Mode::plain);
  return allocator.allocate(bytes);
}

template <class T>
std::vector<T> download(const void* src, std::size_t count) {
  std::vector<T> v(count);
  if (count) MOE_CUDA_CHECK(cudaMemcpy(v.data(), src, count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

std::uint64_t base_seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("MOE_TEST_SEED");
    const std::uint64_t v = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    std::printf("test_moe_kernels: MOE_TEST_SEED=%llu\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::uint64_t case_seed() {
  static std::uint64_t n = 0;
  return mix64(base_seed() + 0x1234 * ++n);
}

// ---------------------------------------------------------------- a layer's weights
struct TestLayer {
  MoeDims dims;
  std::uint64_t seed = 0;
  std::vector<DeviceBuffer> buffers;
  DeviceBuffer router;
  DeviceBuffer selection_bias;  // noaux_tc's correction bias, the generator's (empty otherwise)
  std::vector<float> selection_bias_host;
  DeviceBuffer tables;
  ExpertTable table;

  const float* selection_bias_or_null() const {
    return selection_bias_host.empty() ? nullptr : selection_bias_host.data();
  }

  // options: the forward's, whose int4_layout() and bf16_layout() say where the weights sit.
  TestLayer(const MoeDims& d, std::uint64_t s, cudaStream_t stream, const ForwardOptions& options = {})
      : dims(d), seed(s) {
    const Int4Layout int4_layout = moe::kernels::int4_layout(options, d, current_device_sm());
    const Bf16Layout bf16_layout = moe::kernels::bf16_layout(options, d, current_device_sm());
    const int et = d.total_experts();
    std::vector<const void*> ptrs(4 * static_cast<std::size_t>(et), nullptr);
    for (int e = 0; e < et; ++e) {
      for (int which = 0; which < 2; ++which) {
        const TensorKind kind = which == 0 ? TensorKind::gate_up : TensorKind::down;
        buffers.push_back(device_buffer(expert_weight_bytes(d, kind)));
        void* w = buffers.back().data();
        void* sc = nullptr;
        if (d.format == WeightFormat::int4) {
          buffers.push_back(device_buffer(expert_scale_bytes(d, kind)));
          sc = buffers.back().data();
        }
        generate_expert_tensor(d, kind, seed, e, w, sc, stream, int4_layout, bf16_layout);
        ptrs[(which * 2) * et + e] = w;
        ptrs[(which * 2 + 1) * et + e] = sc;
      }
    }
    router = device_buffer(router_bytes(d));
    generate_router(d, seed, router.as<__nv_bfloat16>(), stream);
    selection_bias_host = moe::kernels::selection_bias_host(d, seed);
    if (!selection_bias_host.empty()) {
      selection_bias = device_buffer(selection_bias_host.size() * sizeof(float));
      MOE_CUDA_CHECK(cudaMemcpy(selection_bias.data(), selection_bias_host.data(), selection_bias.bytes(),
                                cudaMemcpyHostToDevice));
    }
    tables = device_buffer(ptrs.size() * sizeof(void*));
    MOE_CUDA_CHECK(cudaMemcpy(tables.data(), ptrs.data(), ptrs.size() * sizeof(void*), cudaMemcpyHostToDevice));
    const void* const* t = tables.as<const void* const>();
    table.gate_up = t;
    table.gate_up_scales = d.format == WeightFormat::int4 ? t + et : nullptr;
    table.down = t + 2 * et;
    table.down_scales = d.format == WeightFormat::int4 ? t + 3 * et : nullptr;
    table.int4_layout = int4_layout;
    table.bf16_layout = bf16_layout;
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
};

struct Shape {
  const char* name;
  MoeDims dims;
};

MoeDims make_dims(int h, int i, int e, int k, int s, Scoring sc = Scoring::softmax, bool renorm = true) {
  MoeDims d;
  d.hidden = h;
  d.inter = i;
  d.experts = e;
  d.top_k = k;
  d.shared = s;
  d.scoring = sc;
  d.renormalize = renorm;
  return d;
}

std::vector<Shape> tiny_shapes() {
  return {{"tiny", make_dims(128, 64, 8, 2, 1)},
          // partial int4 groups (96 < 128, 160 = 128 + 32), sigmoid without renormalisation
          {"tiny-sigmoid", make_dims(96, 160, 16, 4, 0, Scoring::sigmoid, false)}};
}

std::vector<Shape> model_shapes() {
  return {{"deepseek-v2-lite", make_dims(2048, 1408, 64, 6, 2)},
          {"qwen3-30b-a3b", make_dims(2048, 768, 128, 8, 0)},
          {"mixtral-8x7b", make_dims(4096, 14336, 8, 2, 0)},
          {"gpt-oss-20b", make_dims(2880, 2880, 32, 4, 0)},
          {"glm-4.5-air", make_dims(4096, 1408, 128, 8, 1)},
          {"deepseek-v3", make_dims(7168, 2048, 256, 8, 1)}};
}

// The M of the forward tests: every decode token count, the tensor-core crossover and beyond,
// or MOE_TEST_M's list.
const std::vector<int>& test_ms() {
  static const std::vector<int> ms = moe::test::ms_from_env("MOE_TEST_M", {1, 2, 3, 4, 5, 8, 16, 33, 64, 256, 1024});
  return ms;
}

// ---------------------------------------------------------------- parallel helper
template <class F>
void parallel_for(int n, F&& f) {
  const int nt = std::max(1, std::min<int>(n, static_cast<int>(std::thread::hardware_concurrency())));
  if (nt <= 1 || n < 64) {
    for (int i = 0; i < n; ++i) f(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < nt; ++t)
    pool.emplace_back([&, t] {
      for (int i = t; i < n; i += nt) f(i);
    });
  for (auto& th : pool) th.join();
}

// ---------------------------------------------------------------- one forward and its check
enum class Routing { uniform, skewed };
const char* routing_name(Routing r) { return r == Routing::uniform ? "uniform" : "skewed"; }

struct Tolerances {
  double h_abs_of_max, down_abs_of_max, layer_rel_l2, layer_abs_of_max;
};

Tolerances tolerances(WeightFormat f, ForwardPath resolved) {
  if (f == WeightFormat::bf16) return {1e-3, 1e-4, 1e-2, 5e-2};
  return {5e-3, resolved == ForwardPath::tensor_core ? 1e-2 : 1e-4, 2e-2, 5e-2};
}

struct Forward {
  const TestLayer& layer;
  int m;
  DeviceBuffer x, out, scratch, bias;
  ScratchLayout layout;
  MoeForwardArgs args;

  Forward(const TestLayer& l, int m_, std::uint64_t xseed, const std::vector<float>* bias_host,
          ForwardPath path, cudaStream_t stream, const ForwardOptions& options = {})
      : layer(l), m(m_), x(device_buffer(input_bytes(l.dims, m_))),
        out(device_buffer(input_bytes(l.dims, m_))),
        scratch(device_buffer(forward_scratch_bytes(l.dims, m_))),
        layout(scratch_layout(l.dims, m_)) {
    generate_input(l.dims, m, xseed, x.as<__nv_bfloat16>(), stream);
    if (bias_host) {
      bias = device_buffer(bias_host->size() * sizeof(float));
      MOE_CUDA_CHECK(cudaMemcpy(bias.data(), bias_host->data(), bias.bytes(), cudaMemcpyHostToDevice));
    }
    args.dims = l.dims;
    args.m = m;
    args.x = x.as<__nv_bfloat16>();
    args.out = out.as<__nv_bfloat16>();
    args.router = l.router.as<__nv_bfloat16>();
    args.router_bias = bias_host ? bias.as<float>() : nullptr;
    args.selection_bias = l.selection_bias_host.empty() ? nullptr : l.selection_bias.as<float>();
    args.experts = l.table;
    args.scratch = scratch.data();
    args.scratch_bytes = scratch.bytes();
    args.path = path;
    args.options = options;
  }

  void poison(cudaStream_t stream) {
    MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.bytes(), stream));
    MOE_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0xFF, scratch.bytes(), stream));
  }
  void run(cudaStream_t stream) {
    poison(stream);
    enqueue_moe_forward(args, stream);
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  template <class T>
  std::vector<T> scratch_vec(std::size_t offset, std::size_t count) const {
    return download<T>(static_cast<const char*>(scratch.data()) + offset, count);
  }
  std::vector<std::uint16_t> out_bits() const { return download<std::uint16_t>(out.data(), out.bytes() / 2); }
};

std::vector<float> skew_bias(const MoeDims& d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> order(d.experts);
  for (int e = 0; e < d.experts; ++e) order[e] = e;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<float> b(d.experts, 0.f);
  for (int i = 0; i < d.top_k; ++i) b[order[i]] = 8.f;  // every token picks these
  if (d.top_k < d.experts) b[order[d.top_k]] = -30.f;   // and never this one
  return b;
}

std::vector<int> sample_tokens(int m, int cap, std::uint64_t seed) {
  if (m <= cap) {
    std::vector<int> all(m);
    for (int t = 0; t < m; ++t) all[t] = t;
    return all;
  }
  std::set<int> s = {0, m - 1};
  std::mt19937_64 rng(seed);
  while (static_cast<int>(s.size()) < cap) s.insert(static_cast<int>(rng() % m));
  return {s.begin(), s.end()};
}

struct CaseStats {
  int sampled = 0, near_ties = 0;
  double layer_rel = 0;
};

// Runs one forward on fresh inputs and checks every stage; returns stats for the summary.
CaseStats check_forward(const TestLayer& L, int m, Routing routing, ForwardPath path, int sample_cap,
                        cudaStream_t stream, bool check_repeat = true, const ForwardOptions& options = {}) {
  const MoeDims& d = L.dims;
  const std::uint64_t xseed = case_seed();
  CAPTURE(xseed);
  std::vector<float> bias;
  if (routing == Routing::skewed) bias = skew_bias(d, xseed);
  Forward f(L, m, xseed, routing == Routing::skewed ? &bias : nullptr, path, stream, options);
  // The mma family's arithmetic is the decode kernels' (codes times scales exactly, fp32
  // accumulation), so it gets their bounds at every M.
  // So is the stream family's (the same fragments, sums added in a fixed order). Where int4
  // streams, the wgmma tiles (the tensor-core path's bounds) take every larger M.
  const ForwardPath resolved = runs_mma_gemm(f.args) || runs_stream_gemm(f.args) ? ForwardPath::decode
                               : in_stream_tiles(d, L.table.int4_layout) ? ForwardPath::tensor_core
                                                                         : resolve_forward_path(f.args);
  const Tolerances tol = tolerances(d.format, resolved);
  // DownRows::bf16 where the wgmma tiles run down: each row element is rounded once to bf16.
  const int sm = current_device_sm();
  const bool bf16_rows = down_rows_in_bf16(
      f.args.options, expert_gemm_kernels(f.args.options, d, f.args.experts.int4_layout, m, sm,
                                          resolve_forward_path(f.args) == ForwardPath::decode));
  f.run(stream);
  const ScratchLayout& lay = f.layout;
  const int k = d.top_k, slots = lay.slots, et = d.total_experts(), H = d.hidden, I = d.inter;
  CaseStats st;

  // Whole output: no poison left (every element written, nothing NaN).
  const std::vector<std::uint16_t> out = f.out_bits();
  std::size_t nan_count = 0;
  for (std::uint16_t b : out) nan_count += std::isnan(bf16_bits_to_float(b)) ? 1 : 0;
  CHECK_MESSAGE(nan_count == 0, nan_count << " NaN/poisoned output elements");

  // Grouping: exact, all tokens.
  const auto ids = f.scratch_vec<int>(lay.topk_ids, static_cast<std::size_t>(m) * k);
  const auto wts = f.scratch_vec<float>(lay.topk_weights, static_cast<std::size_t>(m) * k);
  bool ids_in_range = true;
  for (int t = 0; t < m; ++t) {
    std::set<int> seen;
    for (int r = 0; r < k; ++r) {
      const int e = ids[t * k + r];
      if (e < 0 || e >= d.experts || !seen.insert(e).second) ids_in_range = false;
    }
  }
  CHECK_MESSAGE(ids_in_range, "top-k ids out of range or repeated");
  if (!ids_in_range) return st;
  const ref::Grouping g = ref::group_pairs(d, m, ids);
  CHECK(f.scratch_vec<int>(lay.expert_counts, et) == g.counts);
  CHECK(f.scratch_vec<int>(lay.expert_offsets, et + 1) == g.offsets);
  const int num_active = f.scratch_vec<int>(lay.num_active, 1)[0];
  CHECK(num_active == static_cast<int>(g.active.size()));
  {
    std::vector<int> expect_active = g.active;
    expect_active.resize(et, -1);  // padded with -1 past the active experts
    CHECK(f.scratch_vec<int>(lay.active_experts, et) == expect_active);
  }
  CHECK(f.scratch_vec<int>(lay.sorted_pairs, lay.pairs) == g.sorted_pairs);
  const auto pos = f.scratch_vec<int>(lay.pair_position, lay.pairs);
  CHECK(pos == g.pair_position);
  {
    std::vector<int> expect_tiles;
    for (int e : g.active)
      for (int p = g.offsets[e]; p < g.offsets[e + 1]; p += kTensorCoreTileRows) {
        expect_tiles.push_back(e);
        expect_tiles.push_back(p);
      }
    const int num_tiles = f.scratch_vec<int>(lay.num_tiles, 1)[0];
    CHECK(num_tiles * 2 == static_cast<int>(expect_tiles.size()));
    CHECK(num_tiles <= lay.max_tiles);
    CHECK(f.scratch_vec<int>(lay.tiles, expect_tiles.size()) == expect_tiles);
  }
  if (routing == Routing::skewed) {
    const std::vector<float> b = bias;
    for (int t = 0; t < m; ++t)
      for (int r = 0; r < k; ++r) CHECK(b[ids[t * k + r]] == 8.f);
  }

  // Sampled tokens: logits, routing, h, down, combine, layer.
  const std::vector<int> tokens = sample_tokens(m, sample_cap, xseed ^ 77);
  const int n = static_cast<int>(tokens.size());
  st.sampled = n;
  std::vector<float> xs(static_cast<std::size_t>(n) * H);
  for (int i = 0; i < n; ++i) input_row_host(d, xseed, tokens[i], xs.data() + static_cast<std::size_t>(i) * H);
  const std::vector<double> rl = ref::router_logits(d, L.seed, xs, n, bias.empty() ? nullptr : bias.data());
  std::vector<int> use_ids(static_cast<std::size_t>(n) * k);
  std::vector<double> use_w(static_cast<std::size_t>(n) * k);
  double max_logit_err = 0, max_w_err = 0;
  for (int i = 0; i < n; ++i) {
    const int t = tokens[i];
    const double* lt = rl.data() + static_cast<std::size_t>(i) * d.experts;
    const auto gl = f.scratch_vec<float>(lay.logits + sizeof(float) * static_cast<std::size_t>(t) * d.experts, d.experts);
    for (int e = 0; e < d.experts; ++e) max_logit_err = std::max(max_logit_err, std::abs(gl[e] - lt[e]));
    std::vector<int> rid(k);
    std::vector<double> rw(k);
    ref::route_token(d, lt, rid.data(), rw.data(), L.selection_bias_or_null());
    bool same = true, near = true;
    for (int r = 0; r < k; ++r) {
      const int ge = ids[t * k + r];
      if (ge != rid[r]) {
        same = false;
        if (std::abs(lt[ge] - lt[rid[r]]) > 2e-4) near = false;
      }
    }
    // A grouped choice may differ at a near-tie of group scores too (a whole group swapped):
    // the reference's margin at both cuts, in choice units, says whether it was one.
    if (!same && d.grouped()) near = ref::topk_margin(d, lt, L.selection_bias_or_null()) <= 2e-4;
    if (!same) {
      CHECK_MESSAGE(near, "token " << t << ": GPU routing differs from the reference beyond a near-tie");
      ++st.near_ties;
    }
    std::copy_n(ids.begin() + t * k, k, use_ids.begin() + i * k);
    ref::weights_for_ids(d, lt, use_ids.data() + i * k, use_w.data() + i * k);
    for (int r = 0; r < k; ++r) max_w_err = std::max(max_w_err, std::abs(wts[t * k + r] - use_w[i * k + r]));
  }
  CHECK_MESSAGE(max_logit_err <= 1e-4, "max logit error " << max_logit_err);
  CHECK_MESSAGE(max_w_err <= 1e-4 * std::max(1.0f, d.routed_scaling), "max top-k weight error " << max_w_err);
  // Llama-4: each pair's gate_up input row, bf16(x * w) with the GPU's weight for the routed
  // slot and x for the shared ones: exact.
  if (d.scale_input) {
    std::size_t bad_rows = 0;
    std::vector<float> want(H);
    for (int i = 0; i < n; ++i)
      for (int s = 0; s < slots; ++s) {
        const float* xt = xs.data() + static_cast<std::size_t>(i) * H;
        if (s < k) ref::scaled_input_row(d, xt, wts[tokens[i] * k + s], want.data());
        else std::copy_n(xt, H, want.data());
        const auto got = f.scratch_vec<std::uint16_t>(
            lay.x_pairs + 2 * (static_cast<std::size_t>(tokens[i]) * slots + s) * H, H);
        for (int c = 0; c < H; ++c) bad_rows += bf16_bits_to_float(got[c]) != want[c];
      }
    CHECK_MESSAGE(bad_rows == 0, bad_rows << " scaled input elements differ");
  }
  // Qwen2-MoE's shared gate: the GPU's (fp32 logit, sigmoid) against float64, sampled tokens.
  const std::vector<double> gate_ref = ref::shared_gate(d, L.seed, xs, n);
  std::vector<double> gate_gpu;
  if (d.shared_gate) {
    const auto g_all = f.scratch_vec<float>(lay.shared_gate, m);
    double max_gate_err = 0;
    for (int i = 0; i < n; ++i) {
      gate_gpu.push_back(g_all[tokens[i]]);
      max_gate_err = std::max(max_gate_err, std::abs(gate_gpu[i] - gate_ref[i]));  // NaN fails
      CHECK(std::isfinite(gate_gpu[i]));
    }
    CHECK_MESSAGE(max_gate_err <= 1e-4, "max shared gate error " << max_gate_err);
  }

  // Per expert: the sampled (token, slot) pairs that use it.
  std::map<int, std::vector<std::pair<int, int>>> users;  // expert -> (sample index, slot)
  for (int i = 0; i < n; ++i)
    for (int s = 0; s < slots; ++s) users[s < k ? use_ids[i * k + s] : d.experts + s - k].push_back({i, s});
  std::vector<double> y_ref(static_cast<std::size_t>(n) * slots * H), y_gpu(y_ref.size());
  double h_bad = 0, down_bad = 0;
  std::size_t h_fail = 0, down_fail = 0;
  for (auto& [e, u] : users) {
    const int rows = static_cast<int>(u.size());
    std::vector<float> x_rows(static_cast<std::size_t>(rows) * H), h_ref(static_cast<std::size_t>(rows) * I),
        h_gpu(h_ref.size());
    std::vector<std::size_t> prow(rows);
    for (int r = 0; r < rows; ++r) {
      const float* x_token = xs.data() + static_cast<std::size_t>(u[r].first) * H;
      float* x_row = x_rows.data() + static_cast<std::size_t>(r) * H;
      // Llama-4: the routed expert's input is bf16(x * w), with the GPU's weight (checked above)
      // so both sides round the same products.
      if (d.scale_input && u[r].second < k)
        ref::scaled_input_row(d, x_token, wts[tokens[u[r].first] * k + u[r].second], x_row);
      else
        std::copy_n(x_token, H, x_row);
      prow[r] = static_cast<std::size_t>(pos[tokens[u[r].first] * slots + u[r].second]);
      const auto hb = f.scratch_vec<std::uint16_t>(lay.h + 2 * prow[r] * I, I);
      for (int j = 0; j < I; ++j) h_gpu[static_cast<std::size_t>(r) * I + j] = bf16_bits_to_float(hb[j]);
    }
    // gate_up + SwiGLU, rows split over threads. h_arith: per element, how far the kernel's
    // own arithmetic may move h. Float accumulation over H terms: about sqrt(H) 2^-24 of the
    // sum of |x w| (random-walk growth). On the int4 tensor-core path each weight is also staged
    // as bf16 (q * scale rounded by up to 2^-9 of itself): independent errors, so 8 standard
    // deviations of their sum, 8 (2^-9 / sqrt 3) |x w|_2, which a correct kernel exceeds with odds
    // below 1e-14 an element. Without this term one element in millions once broke the
    // statistical bound (glm-4.5-air int4, M=256).
    const double weight_rounding = d.format == WeightFormat::int4 && resolved == ForwardPath::tensor_core
                                       ? 8.0 * std::ldexp(1.0, -9) / std::sqrt(3.0) : 0.0;
    const double accumulation = std::sqrt(double(H)) * std::ldexp(1.0, -24);
    std::vector<double> h_arith(h_ref.size());
    parallel_for(I, [&](int j) {
      std::vector<float> wg(H), wu(H);
      expert_row_host(d, TensorKind::gate_up, L.seed, e, j, wg.data());
      expert_row_host(d, TensorKind::gate_up, L.seed, e, static_cast<std::size_t>(I) + j, wu.data());
      for (int r = 0; r < rows; ++r) {
        const float* xr = x_rows.data() + static_cast<std::size_t>(r) * H;
        double gg = 0, uu = 0, g1 = 0, u1 = 0, g2 = 0, u2 = 0;  // sums, sums of |.|, of squares
        for (int kk = 0; kk < H; ++kk) {
          const double tg = double(xr[kk]) * wg[kk], tu = double(xr[kk]) * wu[kk];
          gg += tg;
          uu += tu;
          g1 += std::abs(tg);
          u1 += std::abs(tu);
          g2 += tg * tg;
          u2 += tu * tu;
        }
        const double sig = 1.0 / (1.0 + std::exp(-gg));
        const std::size_t at = static_cast<std::size_t>(r) * I + j;
        h_ref[at] = round_to_bf16(static_cast<float>(gg * sig * uu));
        // The product rule over the two sums' error bounds; |d silu / dg| <= 1.1.
        const double eg = accumulation * g1 + weight_rounding * std::sqrt(g2);
        const double eu = accumulation * u1 + weight_rounding * std::sqrt(u2);
        h_arith[at] = 1.1 * eg * (std::abs(uu) + eu) + std::abs(gg * sig) * eu;
      }
    });
    double hmax = 0;
    for (float v : h_ref) hmax = std::max(hmax, double(std::abs(v)));
    for (std::size_t i = 0; i < h_ref.size(); ++i) {
      const double dlt = std::abs(double(h_gpu[i]) - h_ref[i]);
      const double lim = std::ldexp(std::abs(h_ref[i]), -7) + tol.h_abs_of_max * hmax + h_arith[i];
      if (!(dlt <= lim)) ++h_fail;
      h_bad = std::max(h_bad, dlt / std::max(hmax, 1e-30));
    }
    // down from the reference h (layer) and from the GPU's h (stage).
    std::vector<double> yr(static_cast<std::size_t>(rows) * H), yg(yr.size());
    parallel_for(H, [&](int nrow) {
      std::vector<float> w(I);
      expert_row_host(d, TensorKind::down, L.seed, e, nrow, w.data());
      for (int r = 0; r < rows; ++r) {
        double a = 0, b = 0;
        for (int j = 0; j < I; ++j) {
          a += double(h_ref[static_cast<std::size_t>(r) * I + j]) * w[j];
          b += double(h_gpu[static_cast<std::size_t>(r) * I + j]) * w[j];
        }
        yr[static_cast<std::size_t>(r) * H + nrow] = a;
        yg[static_cast<std::size_t>(r) * H + nrow] = b;
      }
    });
    double ymax = 0;
    for (double v : yg) ymax = std::max(ymax, std::abs(v));
    for (int r = 0; r < rows; ++r) {
      std::vector<float> dg;
      if (bf16_rows) {
        for (std::uint16_t b : f.scratch_vec<std::uint16_t>(lay.down_out + 2 * prow[r] * H, H))
          dg.push_back(bf16_bits_to_float(b));
      } else {
        dg = f.scratch_vec<float>(lay.down_out + 4 * prow[r] * H, H);
      }
      for (int c = 0; c < H; ++c) {
        const double ref = yg[static_cast<std::size_t>(r) * H + c];
        const double dlt = std::abs(dg[c] - ref);
        const double rounding = bf16_rows ? std::ldexp(std::abs(ref), -8) : 0.0;  // one bf16 rounding
        if (!(dlt <= tol.down_abs_of_max * ymax + rounding)) ++down_fail;
        down_bad = std::max(down_bad, dlt / std::max(ymax, 1e-30));
        const std::size_t dst = (static_cast<std::size_t>(u[r].first) * slots + u[r].second) * H + c;
        y_gpu[dst] = dg[c];
        y_ref[dst] = yr[static_cast<std::size_t>(r) * H + c];
      }
    }
  }
  CHECK_MESSAGE(h_fail == 0, h_fail << " h elements out of bound; worst |d|/max|h| " << h_bad);
  CHECK_MESSAGE(down_fail == 0, down_fail << " down elements out of bound; worst |d|/max|y| " << down_bad);

  // Combine from the GPU's own down outputs and weights: one bf16 rounding apart.
  std::vector<double> gw(use_w.size());
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < k; ++r) gw[i * k + r] = wts[tokens[i] * k + r];
  const std::vector<double> comb = ref::combine(d, n, y_gpu, gw, gate_gpu.empty() ? nullptr : gate_gpu.data());
  const std::vector<double> layer = ref::combine(d, n, y_ref, use_w, gate_ref.empty() ? nullptr : gate_ref.data());
  std::size_t comb_fail = 0;
  double num = 0, den = 0, maxd = 0, maxr = 0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < H; ++c) {
      const double gv = bf16_bits_to_float(out[static_cast<std::size_t>(tokens[i]) * H + c]);
      const double cv = comb[static_cast<std::size_t>(i) * H + c];
      if (!(std::abs(gv - cv) <= std::ldexp(std::abs(cv), -8) + 1e-7)) ++comb_fail;
      const double lv = layer[static_cast<std::size_t>(i) * H + c];
      num += (gv - lv) * (gv - lv);
      den += lv * lv;
      maxd = std::max(maxd, std::abs(gv - lv));
      maxr = std::max(maxr, std::abs(lv));
    }
  CHECK_MESSAGE(comb_fail == 0, comb_fail << " combine elements beyond one bf16 rounding");
  st.layer_rel = std::sqrt(num / std::max(den, 1e-300));
  CHECK_MESSAGE(st.layer_rel < tol.layer_rel_l2, "layer relative L2 error " << st.layer_rel);
  CHECK_MESSAGE(maxd <= tol.layer_abs_of_max * maxr, "layer max |d| " << maxd << " vs max|ref| " << maxr);
  CHECK(den > 0);

  if (check_repeat && moe::test::repeat_from_env()) {  // same inputs, same bits
    const auto ids1 = ids;
    f.run(stream);
    CHECK(f.out_bits() == out);
    CHECK(f.scratch_vec<int>(lay.topk_ids, ids1.size()) == ids1);
  }
  return st;
}

std::string case_name(const char* shape, const MoeDims& d, int m, Routing r, ForwardPath p) {
  return std::string(shape) + " " + std::string(to_string(d.format)) + " m=" + std::to_string(m) + " " +
         routing_name(r) + " path=" + std::string(to_string(p));
}

struct StreamHolder {
  cudaStream_t s = nullptr;
  StreamHolder() { MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~StreamHolder() { cudaStreamDestroy(s); }
};

// The forward's options with programmatic dependent launch on or off, the rest at defaults.
ForwardOptions with_pdl(bool on) {
  ForwardOptions o;
  o.programmatic_launch = on;
  return o;
}

// The expert GEMM choices a format's layers run under: for int4 the default (the mma family
// on the row layout from M=9 to 64) and gemm=legacy (the tensor-core tiles there).
std::vector<GemmFamily> gemm_choices(WeightFormat f) {
  if (f == WeightFormat::int4) return {GemmFamily::automatic, GemmFamily::legacy};
  return {GemmFamily::automatic};
}

// The int4 decode kernels a decode-path case runs under: both (SIMT and tensor cores) where
// the case is int4 on the decode path, else the default choice.
std::vector<Int4Decode> int4_decode_kernels(WeightFormat f, ForwardPath p) {
  if (f == WeightFormat::int4 && p == ForwardPath::decode) return {Int4Decode::simt, Int4Decode::tensor_cores};
  return {Int4Decode::automatic};
}

// Per warp: sums[w * 32 + l] = warp_sums_transposed's result in lane l, and
// reference[w * N + j] = warp_sum of value j (as lane 0 has it).
template <int N>
__global__ void warp_sums_kernel(const float* values, float* sums, float* reference) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float v[N];
#pragma unroll
  for (int j = 0; j < N; ++j) {
    v[j] = values[(warp * N + j) * 32 + lane];
    const float r = moe::kernels::detail::warp_sum(v[j]);
    if (lane == 0) reference[warp * N + j] = r;
  }
  sums[warp * 32 + lane] = moe::kernels::detail::warp_sums_transposed(v);
}

template <int N>
void check_warp_sums_transposed(std::mt19937_64& rng) {
  constexpr int kWarps = 4;
  CAPTURE(N);
  // Magnitudes over 2^-20 .. 2^20 and both signs: a different pairing or order of the adds
  // changes the rounding, so only warp_sum's own pairs give its bits.
  std::vector<float> values(kWarps * N * 32);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f);
  std::uniform_int_distribution<int> exponent(-20, 20), sign(0, 1);
  for (float& v : values) v = std::ldexp(mantissa(rng), exponent(rng)) * (sign(rng) ? -1.f : 1.f);
  DeviceBuffer in = device_buffer(values.size() * sizeof(float));
  DeviceBuffer sums = device_buffer(kWarps * 32 * sizeof(float));
  DeviceBuffer reference = device_buffer(kWarps * N * sizeof(float));
  MOE_CUDA_CHECK(cudaMemcpy(in.data(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
  // NaN until written; every input and sum is finite, so an unwritten one cannot match.
  MOE_CUDA_CHECK(cudaMemset(sums.data(), 0xFF, kWarps * 32 * sizeof(float)));
  MOE_CUDA_CHECK(cudaMemset(reference.data(), 0xFF, kWarps * N * sizeof(float)));
  warp_sums_kernel<N><<<1, kWarps * 32>>>(in.as<float>(), sums.as<float>(), reference.as<float>());
  MOE_CHECK_LAUNCH("warp_sums_kernel");
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = download<float>(sums.data(), kWarps * 32);
  const auto want = download<float>(reference.data(), kWarps * N);
  int bad = 0;
  for (int w = 0; w < kWarps; ++w)
    for (int l = 0; l < 32; ++l) {
      const float g = got[w * 32 + l], r = want[w * N + l / (32 / N)];
      bad += !std::isfinite(g) || std::memcmp(&g, &r, sizeof g) != 0;  // the same bits
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("warp_sums_transposed gives each value warp_sum's bits") {
  moe::test::test_device();
  std::mt19937_64 rng(case_seed());
  check_warp_sums_transposed<1>(rng);
  check_warp_sums_transposed<2>(rng);
  check_warp_sums_transposed<4>(rng);
  check_warp_sums_transposed<8>(rng);
  check_warp_sums_transposed<16>(rng);
  check_warp_sums_transposed<32>(rng);
}

TEST_CASE("generation kernels match the host derivation") {
  moe::test::test_device();
  StreamHolder st;
  for (WeightFormat fmt : {WeightFormat::bf16, WeightFormat::int4}) {
    MoeDims d = make_dims(2880, 160, 4, 2, 1);
    d.format = fmt;
    const std::uint64_t seed = case_seed();
    CAPTURE(to_string(fmt));
    for (TensorKind kind : {TensorKind::gate_up, TensorKind::down}) {
      const TensorShape sh = expert_tensor_shape(d, kind);
      DeviceBuffer w = device_buffer(expert_weight_bytes(d, kind));
      DeviceBuffer s = device_buffer(expert_scale_bytes(d, kind));
      generate_expert_tensor(d, kind, seed, 4, w.data(), fmt == WeightFormat::int4 ? s.data() : nullptr, st.s);
      MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
      std::vector<float> row(sh.k);
      std::size_t bad = 0;
      if (fmt == WeightFormat::bf16) {
        const auto hw = download<std::uint16_t>(w.data(), sh.rows * sh.k);
        for (std::size_t r = 0; r < sh.rows; r += 7) {
          expert_row_host(d, kind, seed, 4, r, row.data());
          for (int c = 0; c < sh.k; ++c) bad += bf16_bits_to_float(hw[r * sh.k + c]) != row[c];
        }
      } else {
        const auto hw = download<std::uint32_t>(w.data(), sh.rows * sh.k / 8);
        const auto hs = download<std::uint16_t>(s.data(), sh.rows * int4_groups(sh.k));
        for (std::size_t r = 0; r < sh.rows; r += 7) {
          expert_row_host(d, kind, seed, 4, r, row.data());
          for (int c = 0; c < sh.k; ++c) bad += int4_dequant(hw.data(), hs.data(), r, sh.k, c) != row[c];
        }
      }
      CHECK(bad == 0);
    }
    DeviceBuffer router = device_buffer(router_bytes(d));
    DeviceBuffer x = device_buffer(input_bytes(d, 3));
    generate_router(d, seed, router.as<__nv_bfloat16>(), st.s);
    generate_input(d, 3, seed + 1, x.as<__nv_bfloat16>(), st.s);
    MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
    const auto hr = download<std::uint16_t>(router.data(), static_cast<std::size_t>(d.experts) * d.hidden);
    const auto hx = download<std::uint16_t>(x.data(), static_cast<std::size_t>(3) * d.hidden);
    std::vector<float> row(d.hidden);
    std::size_t bad = 0;
    for (int e = 0; e < d.experts; ++e) {
      router_row_host(d, seed, e, row.data());
      for (int c = 0; c < d.hidden; ++c) bad += bf16_bits_to_float(hr[e * d.hidden + c]) != row[c];
    }
    for (int t = 0; t < 3; ++t) {
      input_row_host(d, seed + 1, t, row.data());
      for (int c = 0; c < d.hidden; ++c) bad += bf16_bits_to_float(hx[t * d.hidden + c]) != row[c];
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("forward on tiny shapes: every M, both formats, both routings, both paths") {
  moe::test::test_device();
  StreamHolder st;
  int cases = 0, ties = 0;
  double worst = 0;
  for (const Shape& sh : tiny_shapes())
    for (WeightFormat fmt : {WeightFormat::bf16, WeightFormat::int4})
      for (GemmFamily gemm : gemm_choices(fmt)) {
        MoeDims d = sh.dims;
        d.format = fmt;
        ForwardOptions base = with_pdl(false);  // the main loop without PDL; PDL runs follow
        base.gemm = gemm;
        const TestLayer layer(d, case_seed(), st.s, base);
        for (int m : test_ms())
          for (Routing r : {Routing::uniform, Routing::skewed})
            for (ForwardPath p : {ForwardPath::automatic, ForwardPath::decode, ForwardPath::tensor_core})
              for (Int4Decode kernels : int4_decode_kernels(fmt, p)) {
                ForwardOptions options = base;
                options.int4_decode = kernels;
                INFO(case_name(sh.name, d, m, r, p) << " int4 decode " << static_cast<int>(kernels) << " gemm "
                                                    << static_cast<int>(gemm));
                const CaseStats s = check_forward(layer, m, r, p, 1 << 20, st.s, true, options);
                ++cases;
                ties += s.near_ties;
                worst = std::max(worst, s.layer_rel);
              }
      }
  // The same with programmatic dependent launch between the decode kernels.
  for (const Shape& sh : tiny_shapes())
    for (WeightFormat fmt : {WeightFormat::bf16, WeightFormat::int4})
      for (GemmFamily gemm : gemm_choices(fmt)) {
        MoeDims d = sh.dims;
        d.format = fmt;
        ForwardOptions options = with_pdl(true);
        options.gemm = gemm;
        const TestLayer layer(d, case_seed(), st.s, options);
        for (int m : {1, 5, 33})
          for (Routing r : {Routing::uniform, Routing::skewed}) {
            INFO(case_name(sh.name, d, m, r, ForwardPath::decode) << " with PDL, gemm " << static_cast<int>(gemm));
            check_forward(layer, m, r, ForwardPath::decode, 1 << 20, st.s, true, options);
            ++cases;
          }
      }
  MESSAGE("tiny shapes: " << cases << " cases, near-ties " << ties << ", worst layer rel L2 " << worst);
}

TEST_CASE("forward on the model shapes") {
  moe::test::test_device();
  StreamHolder st;
  const ForwardOptions no_pdl = with_pdl(false);  // the main loop without PDL; the PDL runs follow
  const auto t0 = std::chrono::steady_clock::now();
  for (const Shape& sh : model_shapes())
    for (WeightFormat fmt : {WeightFormat::bf16, WeightFormat::int4}) {
      MoeDims d = sh.dims;
      d.format = fmt;
      const TestLayer layer(d, case_seed(), st.s);
      // CPU reference cost per token ~ slots * 3*H*I; sample so a case stays well under a second.
      const double per_token = double(d.top_k + d.shared) * 3.0 * d.hidden * d.inter;
      int ties = 0, sampled = 0;
      double worst = 0;
      for (int m : test_ms())
        for (Routing r : {Routing::uniform, Routing::skewed}) {
          const int cap = r == Routing::skewed ? 4 : std::max(2, static_cast<int>(3e8 / per_token));
          INFO(case_name(sh.name, d, m, r, ForwardPath::automatic));
          const CaseStats s = check_forward(layer, m, r, ForwardPath::automatic, cap, st.s, m <= 64, no_pdl);
          ties += s.near_ties;
          sampled += s.sampled;
          worst = std::max(worst, s.layer_rel);
        }
      // One explicit tensor-core run at small M and one decode run at large M per shape.
      {
        INFO(case_name(sh.name, d, 8, Routing::uniform, ForwardPath::tensor_core));
        check_forward(layer, 8, Routing::uniform, ForwardPath::tensor_core, 2, st.s, false, no_pdl);
      }
      {
        INFO(case_name(sh.name, d, 256, Routing::skewed, ForwardPath::decode));
        check_forward(layer, 256, Routing::skewed, ForwardPath::decode, 2, st.s, false, no_pdl);
      }
      for (int m : {1, 8}) {
        INFO(case_name(sh.name, d, m, Routing::uniform, ForwardPath::decode) << " with PDL");
        check_forward(layer, m, Routing::uniform, ForwardPath::decode, 2, st.s, true, with_pdl(true));
      }
      if (fmt == WeightFormat::int4) {  // the kernels that read rows, where the default streams
        ForwardOptions legacy = no_pdl;
        legacy.gemm = GemmFamily::legacy;
        const TestLayer rows(d, case_seed(), st.s, legacy);  // generated in the rows legacy reads
        for (int m : {16, 64}) {
          INFO(case_name(sh.name, d, m, Routing::uniform, ForwardPath::automatic) << " gemm=legacy");
          check_forward(rows, m, Routing::uniform, ForwardPath::automatic, 2, st.s, false, legacy);
        }
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      MESSAGE(std::string(sh.name) << " " << std::string(to_string(fmt)) << ": " << test_ms().size() * 2 << " cases, " << sampled
                      << " sampled tokens checked against the reference, near-ties " << ties
                      << ", worst layer rel L2 " << worst << " (" << secs << " s so far)");
    }
}

// The mma and stream expert GEMM families (ForwardOptions::gemm = mma or stream, every M): the
// whole layer and every stage against the reference, with the bounds above, int4 weights in
// their fragment layout.
ForwardOptions family_options(GemmFamily family, bool pdl) {
  ForwardOptions o = with_pdl(pdl);
  o.gemm = family;
  return o;
}

// A usable device that runs the family (mma: sm_80+, bf16 mma.sync; stream: sm_90+, bulk
// copies); says so where it is not.
bool family_supported(GemmFamily family) {
  moe::test::test_device();
  const int need = family == GemmFamily::stream ? 90 : 80;
  if (current_device_sm() >= need) return true;
  MESSAGE("gemm=" << std::string(to_string(family)) << " needs sm_" << need << "; skipped on sm_" << current_device_sm());
  return false;
}

// MOE_TEST_SHAPES=a,b keeps those names of `all` only (compute-sanitizer runs one model shape at
// a time: racecheck takes minutes per shape); unset, all of them.
std::vector<Shape> shapes_from_env(const std::vector<Shape>& all) {
  std::vector<std::string> names;
  for (const Shape& sh : all) names.push_back(sh.name);
  std::vector<Shape> kept;
  for (std::size_t i : moe::test::shape_indices_from_env(names)) kept.push_back(all[i]);
  return kept;
}

// Every M from 1 to 64 (passes of 8, 16 and 32 tokens, several passes beyond 32 at the shared
// experts), or MOE_TEST_M's list, and 256.
std::vector<int> family_test_ms() {
  std::vector<int> all;
  for (int m = 1; m <= 64; ++m) all.push_back(m);
  all.push_back(256);
  return moe::test::ms_from_env("MOE_TEST_M", all);
}

void check_family_on_tiny_shapes(GemmFamily family) {
  if (!family_supported(family)) return;
  StreamHolder st;
  int cases = 0;
  double worst = 0;
  for (const Shape& sh : tiny_shapes())
    for (WeightFormat fmt : {WeightFormat::bf16, WeightFormat::int4}) {
      MoeDims d = sh.dims;
      d.format = fmt;
      const TestLayer layer(d, case_seed(), st.s, family_options(family, false));
      for (int m : family_test_ms())
        for (Routing r : {Routing::uniform, Routing::skewed})
          for (bool pdl : {false, true}) {
            if (pdl && m % 8 != 1 && m != 64) continue;  // PDL at a few M
            INFO(case_name(sh.name, d, m, r, ForwardPath::automatic) << " gemm=" << std::string(to_string(family)) << " pdl=" << pdl);
            const CaseStats s =
                check_forward(layer, m, r, ForwardPath::automatic, 1 << 20, st.s, true, family_options(family, pdl));
            ++cases;
            worst = std::max(worst, s.layer_rel);
          }
    }
  MESSAGE(std::string(to_string(family)) << " tiny shapes: " << cases << " cases, worst layer rel L2 " << worst);
}

void check_family_on_model_shapes(GemmFamily family) {
  if (!family_supported(family)) return;
  StreamHolder st;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Shape& sh : shapes_from_env(model_shapes()))
    for (WeightFormat fmt : moe::test::formats_from_env()) {
      MoeDims d = sh.dims;
      d.format = fmt;
      const TestLayer layer(d, case_seed(), st.s, family_options(family, false));
      const double per_token = double(d.top_k + d.shared) * 3.0 * d.hidden * d.inter;
      int sampled = 0;
      double worst = 0;
      for (int m : family_test_ms()) {
        // Uniform routing at every M; skewed (every token on the same experts: the longest
        // passes) and PDL at a few.
        const bool few = m == 1 || m == 8 || m == 33 || m == 64 || m == 256;
        for (Routing r : {Routing::uniform, Routing::skewed}) {
          if (r == Routing::skewed && !few) continue;
          const int cap = r == Routing::skewed ? 4 : std::max(2, static_cast<int>(3e8 / per_token));
          INFO(case_name(sh.name, d, m, r, ForwardPath::automatic) << " gemm=" << std::string(to_string(family)));
          const CaseStats s = check_forward(layer, m, r, ForwardPath::automatic, cap, st.s, few && m <= 64,
                                            family_options(family, false));
          sampled += s.sampled;
          worst = std::max(worst, s.layer_rel);
        }
        if (few) {
          INFO(case_name(sh.name, d, m, Routing::uniform, ForwardPath::automatic) << " gemm=" << std::string(to_string(family))
                                                                                  << " with PDL");
          check_forward(layer, m, Routing::uniform, ForwardPath::automatic, 2, st.s, true, family_options(family, true));
        }
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      MESSAGE(std::string(sh.name) << " " << std::string(to_string(fmt)) << " gemm=" << std::string(to_string(family)) << ": "
                                   << sampled << " sampled tokens checked, worst layer rel L2 " << worst << " (" << secs
                                   << " s so far)");
    }
}

TEST_CASE("mma expert GEMM on tiny shapes: every M 1..64, both formats, both routings") {
  check_family_on_tiny_shapes(GemmFamily::mma);
}

TEST_CASE("mma expert GEMM on the model shapes: every M 1..64, both formats") {
  check_family_on_model_shapes(GemmFamily::mma);
}

TEST_CASE("stream expert GEMM on tiny shapes: every M 1..64, both formats, both routings") {
  check_family_on_tiny_shapes(GemmFamily::stream);
}

TEST_CASE("stream expert GEMM on the model shapes: every M 1..64, both formats") {
  check_family_on_model_shapes(GemmFamily::stream);
}

// The warp-group MMA tiles (ForwardOptions::tiles = wgmma; int4 dequantised in shared memory,
// from the row layout and from the stream tiles) at the tensor-core path's sizes:
// partial row tiles (65, 129), tiles of one and two warp groups' rows, several tiles an SM
// (1024), skewed routing (one expert's many tiles), against the reference with the tensor-core
// path's bounds; every stage checked. MOE_TEST_SHAPES picks among the tiny and model shapes.
TEST_CASE("wgmma tiles on tiny and model shapes: both formats in each of their layouts, M = 65..1024, both routings") {
  moe::test::test_device();
  if (current_device_sm() != 90) {
    MESSAGE("tiles=wgmma needs sm_90a; skipped on sm_" << current_device_sm());
    return;
  }
  StreamHolder st;
  std::vector<Shape> all = tiny_shapes();
  for (const Shape& sh : model_shapes()) all.push_back(sh);
  for (const Shape& sh : shapes_from_env(all))
    for (WeightFormat fmt : moe::test::formats_from_env())
      for (GemmFamily gemm : gemm_choices(fmt))  // int4: in the stream tiles (auto) and in rows (legacy)
        for (bool stream_bf16 : {false, true}) {  // bf16: in rows and in the stage tiles (stream-bf16)
          if (stream_bf16 && fmt != WeightFormat::bf16) continue;
          MoeDims d = sh.dims;
          d.format = fmt;
          ForwardOptions o;
          o.gemm = gemm;
          o.tiles = TensorCoreTiles::wgmma;
          o.stream_bf16 = stream_bf16;
          const TestLayer layer(d, case_seed(), st.s, o);
          REQUIRE(wgmma_tiles_run(d, o, layer.table.layouts(), 1));
          const std::string layout(fmt == WeightFormat::int4 ? to_string(layer.table.int4_layout)
                                                             : to_string(layer.table.bf16_layout));
          const double per_token = double(d.top_k + d.shared) * 3.0 * d.hidden * d.inter;
          for (DownRows rows : {DownRows::fp32, DownRows::bf16}) {  // down's rows as the combine reads them
            o.down_rows = rows;
            const std::string rows_name = rows == DownRows::bf16 ? "bf16" : "fp32";
            double worst = 0;
            for (int m : moe::test::ms_from_env("MOE_TEST_M", {65, 129, 256, 1024}))
              for (Routing r : {Routing::uniform, Routing::skewed}) {
                INFO(case_name(sh.name, d, m, r, ForwardPath::tensor_core)
                     << " tiles=wgmma, weights in " << layout << ", down rows " << rows_name);
                const int cap = std::max(2, static_cast<int>(1e9 / per_token));
                const CaseStats s = check_forward(layer, m, r, ForwardPath::tensor_core, cap, st.s, m <= 256, o);
                worst = std::max(worst, s.layer_rel);
              }
            MESSAGE(std::string(sh.name) << " " << std::string(to_string(fmt)) << " tiles=wgmma, weights in " << layout
                                           << ", down rows " << rows_name << ": worst layer rel L2 " << worst);
          }
        }
}

TEST_CASE("int4 generation in the mma layout and the stream tiles matches the row layout re-laid on the host") {
  moe::test::test_device();
  StreamHolder st;
  for (Int4Layout layout : {Int4Layout::mma_fragments, Int4Layout::stream_tiles})
    for (int h : {2880, 2048, 96}) {
      MoeDims d = make_dims(h, 160, 4, 2, 1);
      d.format = WeightFormat::int4;
      const std::uint64_t seed = case_seed();
      CAPTURE(to_string(layout));
      CAPTURE(h);
      for (TensorKind kind : {TensorKind::gate_up, TensorKind::down}) {
        const TensorShape sh = expert_tensor_shape(d, kind);
        DeviceBuffer rows_w = device_buffer(expert_weight_bytes(d, kind)), rows_s = device_buffer(expert_scale_bytes(d, kind));
        DeviceBuffer tile_w = device_buffer(expert_weight_bytes(d, kind)), tile_s = device_buffer(expert_scale_bytes(d, kind));
        MOE_CUDA_CHECK(cudaMemset(tile_w.data(), 0xFF, tile_w.bytes()));
        MOE_CUDA_CHECK(cudaMemset(tile_s.data(), 0xFF, tile_s.bytes()));
        MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream poison lands before st.s generates
        generate_expert_tensor(d, kind, seed, 3, rows_w.data(), rows_s.data(), st.s, Int4Layout::rows);
        generate_expert_tensor(d, kind, seed, 3, tile_w.data(), tile_s.data(), st.s, layout);
        MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
        const std::size_t words = sh.rows * sh.k / 8, scales = sh.rows * int4_groups(sh.k);
        const auto rw = download<std::uint32_t>(rows_w.data(), words), tw = download<std::uint32_t>(tile_w.data(), words);
        const auto rs = download<std::uint16_t>(rows_s.data(), scales), ts = download<std::uint16_t>(tile_s.data(), scales);
        std::vector<std::uint32_t> want_w(words);
        std::vector<std::uint16_t> want_s(scales);
        const int paired = kind == TensorKind::gate_up ? d.inter : 0;
        if (layout == Int4Layout::mma_fragments)
          int4_mma_layout::relay_to_mma(rw.data(), rs.data(), sh.rows, sh.k, paired, want_w.data(), want_s.data());
        else
          int4_stream_layout::relay_to_stream(rw.data(), rs.data(), sh.rows, sh.k, paired, want_w.data(), want_s.data());
        CHECK(tw == want_w);
        CHECK(ts == want_s);
      }
    }
}

TEST_CASE("bf16 generation in the stream tiles matches the row layout re-laid on the host") {
  moe::test::test_device();
  StreamHolder st;
  for (int h : {2880, 2048, 96}) {
    const MoeDims d = make_dims(h, 160, 4, 2, 1);
    const std::uint64_t seed = case_seed();
    CAPTURE(h);
    for (TensorKind kind : {TensorKind::gate_up, TensorKind::down}) {
      const TensorShape sh = expert_tensor_shape(d, kind);
      const std::size_t elems = sh.rows * sh.k;
      DeviceBuffer rows = device_buffer(expert_weight_bytes(d, kind)), tiles = device_buffer(expert_weight_bytes(d, kind));
      MOE_CUDA_CHECK(cudaMemset(tiles.data(), 0xFF, tiles.bytes()));
      MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream poison lands before st.s generates
      generate_expert_tensor(d, kind, seed, 3, rows.data(), nullptr, st.s, Int4Layout::rows, Bf16Layout::rows);
      generate_expert_tensor(d, kind, seed, 3, tiles.data(), nullptr, st.s, Int4Layout::rows, Bf16Layout::stream_tiles);
      MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
      const auto r = download<std::uint16_t>(rows.data(), elems), t = download<std::uint16_t>(tiles.data(), elems);
      std::vector<std::uint16_t> want(elems);
      bf16_stream_layout::relay_to_tiles(r.data(), sh.rows, sh.k, kind == TensorKind::gate_up ? d.inter : 0, want.data());
      CHECK(t == want);
    }
  }
}

TEST_CASE("graph capture and replay give the eager bits, also after inputs change") {
  moe::test::test_device();
  StreamHolder st;
  struct G {
    const char* name;
    MoeDims d;
    int m;
    GemmFamily gemm = GemmFamily::automatic;
  };
  std::vector<G> gs;
  // The tensor-core case at the largest M of the test list, at most 256 (MOE_TEST_M narrows it
  // for slow runs: the sanitizer script's list ends at 64).
  const int large_m = std::min(256, *std::max_element(test_ms().begin(), test_ms().end()));
  for (WeightFormat fmt : moe::test::formats_from_env()) {
    MoeDims tiny = tiny_shapes()[0].dims, lite = model_shapes()[0].dims;
    tiny.format = lite.format = fmt;
    gs.push_back({"tiny", tiny, 5});
    gs.push_back({"deepseek-v2-lite", lite, 1});
    if (large_m > decode_max_tokens(fmt, Int4Decode::automatic)) gs.push_back({"deepseek-v2-lite", lite, large_m});
    for (int m : {1, 8, large_m}) gs.push_back({"deepseek-v2-lite", lite, m, GemmFamily::mma});
    if (current_device_sm() >= 90)
      for (int m : {1, 8, large_m}) gs.push_back({"deepseek-v2-lite", lite, m, GemmFamily::stream});
  }
  moe::test::TestPart part = moe::test::part_from_env();
  for (int pdl = 0; pdl < 2; ++pdl)
  for (const G& g : gs) {
    if (!part.take()) continue;
    INFO(g.name << " " << std::string(to_string(g.d.format)) << " m=" << g.m << " pdl=" << pdl << " gemm="
                << static_cast<int>(g.gemm));
    ForwardOptions options = with_pdl(pdl == 1);
    options.gemm = g.gemm;
    const TestLayer layer(g.d, case_seed(), st.s, options);
    const std::uint64_t xs1 = case_seed(), xs2 = case_seed();
    Forward f(layer, g.m, xs1, nullptr, ForwardPath::automatic, st.s, options);
    f.run(st.s);
    const auto eager1 = f.out_bits();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    MOE_CUDA_CHECK(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal));
    enqueue_moe_forward(f.args, st.s);
    MOE_CUDA_CHECK(cudaStreamEndCapture(st.s, &graph));
    MOE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    f.poison(st.s);
    MOE_CUDA_CHECK(cudaGraphLaunch(exec, st.s));
    MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
    CHECK(f.out_bits() == eager1);
    // New activations (so new routing) between capture and replay.
    generate_input(g.d, g.m, xs2, f.x.as<__nv_bfloat16>(), st.s);
    f.run(st.s);
    const auto eager2 = f.out_bits();
    CHECK(eager2 != eager1);
    for (int rep = 0; rep < 3; ++rep) {
      f.poison(st.s);
      MOE_CUDA_CHECK(cudaGraphLaunch(exec, st.s));
      MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
      CHECK(f.out_bits() == eager2);
    }
    f.run(st.s);  // eager after replay
    CHECK(f.out_bits() == eager2);
    MOE_CUDA_CHECK(cudaGraphExecDestroy(exec));
    MOE_CUDA_CHECK(cudaGraphDestroy(graph));
  }
}

// Shapes for the route comparisons: softmax and sigmoid scoring, with and without shared
// experts and renormalisation, E from 8 (cluster blocks without experts) to 128 (16 experts a
// cluster block); deepseek-v3's 256 experts are left out for time.
std::vector<Shape> route_test_shapes() {
  std::vector<Shape> all = tiny_shapes();
  for (const Shape& sh : model_shapes())
    if (std::string(sh.name) != "deepseek-v3") all.push_back(sh);
  return shapes_from_env(all);
}

// gate_up's last block streams no shared expert when the cluster route's ranking block holds
// its SM (ForwardOptions::spare_late_block): the other warps take its shared units. Each unit's sums are the
// same whichever warp computes them, so the output must keep its bits. A full grid is needed
// for the rule to apply: the model shapes with shared experts, at decode sizes.
TEST_CASE("sparing gate_up's late block keeps the output's bits") {
  const moe::Device& dev = moe::test::test_device();
  if (dev.props.major < 9) {
    MESSAGE("sm " << dev.props.major << dev.props.minor << ": no cluster route, so no late block to spare");
    return;
  }
  StreamHolder st;
  int cases = 0;
  for (const Shape& sh : model_shapes()) {
    if (sh.dims.shared == 0 || std::string(sh.name) == "deepseek-v3") continue;
    for (WeightFormat fmt : {WeightFormat::bf16, WeightFormat::int4}) {
      MoeDims d = sh.dims;
      d.format = fmt;
      const TestLayer layer(d, case_seed(), st.s);
      for (int m : {1, 2, 5, 8})
        for (Routing r : {Routing::uniform, Routing::skewed}) {
          if (m > decode_max_tokens(fmt, Int4Decode::automatic)) continue;
          INFO(case_name(sh.name, d, m, r, ForwardPath::decode));
          const std::uint64_t xseed = case_seed();
          std::vector<float> bias;
          if (r == Routing::skewed) bias = skew_bias(d, xseed);
          Forward f(layer, m, xseed, r == Routing::skewed ? &bias : nullptr, ForwardPath::decode, st.s,
                    with_pdl(true));
          f.args.options.spare_late_block = false;
          f.run(st.s);  // poisons the output and scratch first
          const auto out_all = f.out_bits();
          f.args.options.spare_late_block = true;
          f.run(st.s);
          const auto out_spared = f.out_bits();
          CHECK(out_spared == out_all);
          // Equal bits could still be equally wrong (a unit neither deal computes leaves its
          // poison in both): no poison left, and the reference.
          std::size_t poisoned = 0;
          for (std::uint16_t b : out_spared) poisoned += std::isnan(bf16_bits_to_float(b)) ? 1 : 0;
          CHECK_MESSAGE(poisoned == 0, poisoned << " NaN/poisoned output elements");
          if (m == 1) check_forward(layer, m, r, ForwardPath::decode, 1, st.s, false, with_pdl(true));
          ++cases;
        }
    }
  }
  CHECK(cases > 0);
  MESSAGE(cases << " cases");
}

// At decode sizes on sm_90+ the route runs as one cluster (ForwardOptions::cluster_route); otherwise as the
// one-kernel route. Both must write the same scratch, bit for bit: logits, top-k ids and
// weights, counts, offsets, active list, tiles, sorted pairs and positions (everything before
// the completion counters, which only the one-kernel route uses), and the same output.
TEST_CASE("the cluster decode route writes the one-kernel route's bits") {
  const moe::Device& dev = moe::test::test_device();
  if (dev.props.major < 9) {
    MESSAGE("sm " << dev.props.major << dev.props.minor << ": no clusters, the one-kernel route is the only route");
    return;
  }
  StreamHolder st;
  for (const Shape& sh : route_test_shapes()) {
    const TestLayer layer(sh.dims, case_seed(), st.s);
    for (int m : {1, 3, 8})
      for (Routing r : {Routing::uniform, Routing::skewed})
        for (int pdl = 0; pdl < 2; ++pdl) {
          INFO(case_name(sh.name, sh.dims, m, r, ForwardPath::decode) << " pdl=" << pdl);
          const std::uint64_t xseed = case_seed();
          std::vector<float> bias;
          if (r == Routing::skewed) bias = skew_bias(sh.dims, xseed);
          Forward f(layer, m, xseed, r == Routing::skewed ? &bias : nullptr, ForwardPath::decode, st.s,
                    with_pdl(pdl == 1));
          REQUIRE(f.layout.route_tiles == 1);
          f.args.options.cluster_route = true;
          f.run(st.s);
          const auto routing_cluster = f.scratch_vec<std::uint8_t>(0, f.layout.done_counters);
          const auto out_cluster = f.out_bits();
          f.args.options.cluster_route = false;
          f.run(st.s);
          CHECK(f.scratch_vec<std::uint8_t>(0, f.layout.done_counters) == routing_cluster);
          CHECK(f.out_bits() == out_cluster);
          // The cluster route with its router rows loaded after the wait instead of held.
          f.args.options.cluster_route = true;
          f.args.options.hold_router_rows = false;
          f.run(st.s);
          CHECK(f.scratch_vec<std::uint8_t>(0, f.layout.done_counters) == routing_cluster);
          CHECK(f.out_bits() == out_cluster);
        }
  }
}

// The route's two top-k selections (a thread a logit by rank; a warp a token by rounds) must
// pick the same ids in the same slots: the same routing scratch and output, bit for bit, on
// both routes (the cluster route at decode sizes, the one-kernel route's token tiles beyond),
// with ties (skewed routing gives every token the same biased experts) and E from 8 to 128.
TEST_CASE("both top-k selections write the same routing bits") {
  moe::test::test_device();
  StreamHolder st;
  moe::test::TestPart part = moe::test::part_from_env();
  for (const Shape& sh : route_test_shapes()) {
    const TestLayer layer(sh.dims, case_seed(), st.s);
    for (int m : {1, 3, 8, 16, 37})
      for (Routing r : {Routing::uniform, Routing::skewed}) {
        if (!part.take()) continue;
        INFO(case_name(sh.name, sh.dims, m, r, ForwardPath::automatic));
        const std::uint64_t xseed = case_seed();
        std::vector<float> bias;
        if (r == Routing::skewed) bias = skew_bias(sh.dims, xseed);
        Forward f(layer, m, xseed, r == Routing::skewed ? &bias : nullptr, ForwardPath::automatic, st.s);
        f.args.options.top_k_select = TopKSelect::ranks;
        f.run(st.s);
        const auto routing_ranks = f.scratch_vec<std::uint8_t>(0, f.layout.done_counters);
        const auto out_ranks = f.out_bits();
        f.args.options.top_k_select = TopKSelect::rounds;
        f.run(st.s);
        CHECK(f.scratch_vec<std::uint8_t>(0, f.layout.done_counters) == routing_ranks);
        CHECK(f.out_bits() == out_ranks);
      }
  }
}

// Layers back to back in one stream, each reading the last one's output, as the engine runs
// them: under programmatic launch the next layer's route is scheduled while the last layer's
// combine still runs (it prefetches router rows), and must not read x or write the shared
// scratch before that combine is done. The chained result must equal the same layers run one
// at a time with a host sync between.
TEST_CASE("chained layers under programmatic launch give the one-at-a-time bits") {
  moe::test::test_device();
  StreamHolder st;
  MoeDims d = model_shapes()[0].dims;  // deepseek-v2-lite: shared experts, softmax
  constexpr int kLayers = 4;
  std::vector<std::unique_ptr<TestLayer>> layers;
  for (int i = 0; i < kLayers; ++i) layers.push_back(std::make_unique<TestLayer>(d, case_seed(), st.s));
  // 1, 4 and 8 tokens (the cluster route's range), or those of MOE_TEST_M's list up to 8.
  std::vector<int> ms{1, 4, 8};
  if (std::getenv("MOE_TEST_M") != nullptr) {
    ms.clear();
    for (int m : test_ms())
      if (m <= 8) ms.push_back(m);
  }
  REQUIRE_MESSAGE(!ms.empty(), "MOE_TEST_M lists no M up to 8 for the chained layers");
  for (int m : ms)
    for (int pdl = 0; pdl < 2; ++pdl) {
      INFO("deepseek-v2-lite m=" << m << " pdl=" << pdl);
      // Activations ping-pong between two buffers; every layer shares one scratch.
      DeviceBuffer act[2] = {device_buffer(input_bytes(d, m)), device_buffer(input_bytes(d, m))};
      DeviceBuffer scratch = device_buffer(forward_scratch_bytes(d, m));
      const std::uint64_t xseed = case_seed();
      auto layer_args = [&](int i) {
        MoeForwardArgs a;
        a.dims = d;
        a.m = m;
        a.x = act[i % 2].as<__nv_bfloat16>();
        a.out = act[(i + 1) % 2].as<__nv_bfloat16>();
        a.router = layers[i]->router.as<__nv_bfloat16>();
        a.experts = layers[i]->table;
        a.scratch = scratch.data();
        a.scratch_bytes = scratch.bytes();
        a.options = with_pdl(pdl == 1);
        return a;
      };
      auto run_all = [&](bool sync_between) {
        generate_input(d, m, xseed, act[0].as<__nv_bfloat16>(), st.s);
        MOE_CUDA_CHECK(cudaMemsetAsync(act[1].data(), 0xFF, act[1].bytes(), st.s));
        MOE_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0xFF, scratch.bytes(), st.s));
        for (int i = 0; i < kLayers; ++i) {
          enqueue_moe_forward(layer_args(i), st.s);
          if (sync_between) MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
        }
        MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
        return download<std::uint16_t>(act[kLayers % 2].data(), act[kLayers % 2].bytes() / 2);
      };
      const auto one_at_a_time = run_all(true);
      for (int rep = 0; rep < 3; ++rep) CHECK(run_all(false) == one_at_a_time);
    }
}

// The expert and combine kernels read indices the route stage wrote into scratch. When scratch
// is overwritten under them (the bugs scratch-regrow and drop-after-inflight reproduce), a
// forward must give wrong numbers a probe can see, not an illegal address that ends the
// process: every such index is clamped (detail::clamp_index). Here every routing field is
// garbage (negative, huge, random) and each path must still finish without a CUDA error.
TEST_CASE("garbage routing in scratch gives wrong numbers, never an illegal address") {
  moe::test::test_device();
  StreamHolder st;
  std::mt19937 rng(static_cast<std::uint32_t>(case_seed()));
  const int specials[] = {INT_MIN, -1, 0, 1, 7, 1 << 20, INT_MAX};
  auto garbage = [&](std::size_t n) {
    std::vector<int> v(n);
    for (int& x : v) x = rng() % 3 == 0 ? specials[rng() % 7] : static_cast<int>(rng());
    return v;
  };
  moe::test::TestPart part = moe::test::part_from_env();
  for (WeightFormat fmt : moe::test::formats_from_env()) {
    MoeDims tiny = tiny_shapes()[0].dims, lite = model_shapes()[0].dims;
    tiny.format = lite.format = fmt;
    for (const MoeDims& d : {tiny, lite}) {
      const TestLayer layer(d, case_seed(), st.s);
      for (int m : {1, 3, 64}) {
        for (ForwardPath path : {ForwardPath::decode, ForwardPath::tensor_core}) {
          if (!part.take()) continue;
          INFO(std::string(to_string(fmt)) << " hidden=" << d.hidden << " m=" << m << " "
                                           << std::string(to_string(path)));
          Forward f(layer, m, case_seed(), nullptr, path, st.s);
          f.poison(st.s);
          enqueue_route(f.args, f.layout, st.s);
          MOE_CUDA_CHECK(cudaStreamSynchronize(st.s));
          const ScratchLayout& l = f.layout;
          const std::size_t et = static_cast<std::size_t>(l.total_experts);
          const std::pair<std::size_t, std::size_t> fields[] = {
              {l.expert_counts, et},      {l.expert_offsets, et + 1},      {l.num_active, 1},
              {l.active_experts, et},     {l.num_tiles, 1},                {l.tiles, 2 * l.max_tiles},
              {l.sorted_pairs, l.pairs},  {l.pair_position, l.pairs}};
          for (const auto& [offset, count] : fields) {
            const std::vector<int> g = garbage(count);
            MOE_CUDA_CHECK(cudaMemcpy(static_cast<char*>(f.scratch.data()) + offset, g.data(),
                                      count * sizeof(int), cudaMemcpyHostToDevice));
          }
          if (path == ForwardPath::decode) {
            enqueue_gate_up_decode(f.args, l, st.s);
            enqueue_down_decode(f.args, l, st.s);
          } else {
            enqueue_gate_up_tensor_core(f.args, l, st.s);
            enqueue_down_tensor_core(f.args, l, st.s);
          }
          enqueue_combine(f.args, l, /*bf16_rows=*/false, st.s);  // the decode and wmma kernels write fp32 rows
          CHECK(cudaStreamSynchronize(st.s) == cudaSuccess);
          CHECK(cudaGetLastError() == cudaSuccess);
        }
      }
    }
  }
}

TEST_CASE("forward rejects bad arguments with the values named") {
  moe::test::test_device();
  StreamHolder st;
  MoeDims d = tiny_shapes()[0].dims;
  const TestLayer layer(d, 1, st.s);
  Forward f(layer, 4, 2, nullptr, ForwardPath::automatic, st.s);
  MoeForwardArgs a = f.args;
  a.scratch_bytes = 1000;
  try {
    enqueue_moe_forward(a, st.s);
    FAIL("scratch too small was accepted");
  } catch (const moe::Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("1000") != std::string::npos);
    CHECK(msg.find(std::to_string(forward_scratch_bytes(d, 4))) != std::string::npos);
  }
  a = f.args;
  a.dims.hidden = 100;
  CHECK_THROWS_WITH_AS(enqueue_moe_forward(a, st.s), doctest::Contains("hidden 100"), moe::Error);
  a = f.args;
  a.dims.top_k = 9;
  CHECK_THROWS_WITH_AS(enqueue_moe_forward(a, st.s), doctest::Contains("top_k 9"), moe::Error);
  a = f.args;
  a.m = 0;
  CHECK_THROWS_WITH_AS(enqueue_moe_forward(a, st.s), doctest::Contains("m 0"), moe::Error);
  // int4 weights in one layout, options that read the other: refused, both named.
  MoeDims d4 = d;
  d4.format = WeightFormat::int4;
  ForwardOptions mma;
  mma.gemm = GemmFamily::mma;
  const TestLayer fragments(d4, 1, st.s, mma);  // gemm=mma: the fragment layout
  Forward f4(fragments, 4, 2, nullptr, ForwardPath::automatic, st.s, mma);
  a = f4.args;
  a.options.gemm = GemmFamily::legacy;
  CHECK_THROWS_WITH_AS(enqueue_moe_forward(a, st.s),
                       doctest::Contains("mma-fragments layout, but these options (gemm=legacy, tiles=auto) read the rows layout"),
                       moe::Error);
  a.options.gemm = GemmFamily::automatic;  // its own layout (the stream tiles on sm_90a) or rows
  CHECK_THROWS_WITH_AS(enqueue_moe_forward(a, st.s), doctest::Contains("(gemm=auto, tiles=auto) read the"), moe::Error);
  a = f4.args;
  a.experts.int4_layout = Int4Layout::rows;
  CHECK_THROWS_WITH_AS(enqueue_moe_forward(a, st.s), doctest::Contains("int4 weights in the rows layout"), moe::Error);
}

namespace {

// Layers with the routing of real configs (docs/configs.md), small enough for the CPU reference
// at every token: DeepSeek-V3's grouped noaux_tc choice with its correction bias and scale,
// DeepSeek-V2's group_limited_greedy (softmax, no renormalisation, scale 16), the scale alone,
// Qwen2-MoE's gated shared MLP (4 experts of the routed width), Llama-4's scaled input.
std::vector<Shape> routing_feature_shapes() {
  MoeDims v3 = make_dims(1024, 256, 256, 8, 1, Scoring::sigmoid, true);
  v3.topk_method = TopKMethod::noaux_tc;
  v3.n_group = 8;
  v3.topk_group = 4;
  v3.routed_scaling = 2.5f;
  MoeDims v2 = make_dims(512, 128, 64, 6, 2, Scoring::softmax, false);
  v2.topk_method = TopKMethod::group_limited_greedy;
  v2.n_group = 8;
  v2.topk_group = 3;
  v2.routed_scaling = 16.0f;
  MoeDims scaled = make_dims(512, 128, 32, 4, 0);
  scaled.routed_scaling = 2.5f;
  MoeDims qwen = make_dims(1024, 256, 60, 4, 4, Scoring::softmax, false);
  qwen.shared_gate = true;
  MoeDims llama = make_dims(1024, 512, 16, 1, 1, Scoring::sigmoid, false);
  llama.scale_input = true;
  return {{"noaux_tc-grouped", v3}, {"group_limited_greedy", v2}, {"routed-scaling", scaled},
          {"shared-gate", qwen}, {"scaled-input", llama}};
}

// Runs a routing-feature layer at every M of the list on both paths (and automatic), both
// routings where the shape allows (skewed routing forces k experts, which a grouped choice
// may drop with their groups), with and without programmatic launch.
void check_routing_features(const char* name, const MoeDims& d, const std::vector<int>& ms, int sample_cap,
                            cudaStream_t stream, moe::test::TestPart& part, int* cases) {
  if (d.scale_input && current_device_sm() < 80) {  // the tensor-core path only (refused below sm_80)
    MESSAGE(name << ": skipped below sm_80");
    return;
  }
  std::optional<TestLayer> layer;  // built for this part's first case (DeepSeek-V3's takes seconds)
  for (int m : ms)
    for (ForwardPath p : {ForwardPath::decode, ForwardPath::tensor_core, ForwardPath::automatic})
      for (Routing r : {Routing::uniform, Routing::skewed}) {
        if (r == Routing::skewed && d.grouped()) continue;
        for (bool pdl : {false, true}) {
          if (!part.take()) continue;
          if (!layer) layer.emplace(d, case_seed(), stream);
          INFO(case_name(name, d, m, r, p) << (pdl ? " with PDL" : ""));
          const CaseStats st = check_forward(*layer, m, r, p, sample_cap, stream, m <= 16, with_pdl(pdl));
          ++*cases;
          if (st.near_ties) MESSAGE(name << " m=" << m << ": near-ties " << st.near_ties);
        }
      }
}

}  // namespace

TEST_CASE("routing of real configs: grouped choice, correction bias, scale, shared gate, scaled input") {
  moe::test::test_device();
  StreamHolder st;
  int cases = 0;
  // MOE_TEST_M and MOE_TEST_FORMATS narrow it (racecheck runs it a format and an M at a time).
  // 129: the grouping over the grid (route_groups_in_grid), its last token tile one token.
  const std::vector<int> ms = moe::test::ms_from_env("MOE_TEST_M", {1, 2, 8, 16, 64, 129});
  moe::test::TestPart part = moe::test::part_from_env();
  for (const Shape& sh : routing_feature_shapes())
    for (WeightFormat fmt : moe::test::formats_from_env()) {
      MoeDims d = sh.dims;
      d.format = fmt;
      CHECK_FALSE(d.plain_routing());
      check_routing_features(sh.name, d, ms, 1 << 20, st.s, part, &cases);
    }
  MESSAGE("routing features: " << cases << " cases");
}

TEST_CASE("routing of real configs never takes the cluster route, and scale_input takes the tensor-core path") {
  moe::test::test_device();
  StreamHolder st;
  for (const Shape& sh : routing_feature_shapes()) {
    CAPTURE(sh.name);
    const TestLayer layer(sh.dims, case_seed(), st.s);
    Forward f(layer, 1, case_seed(), nullptr, ForwardPath::decode, st.s);
    CHECK_FALSE(route_runs_as_cluster(f.args));
    if (sh.dims.scale_input && current_device_sm() >= 80)
      CHECK(resolve_forward_path(f.args) == ForwardPath::tensor_core);
    if (!sh.dims.scale_input) CHECK(resolve_forward_path(f.args) == ForwardPath::decode);
  }
}

TEST_CASE("routing of real configs: the committed configs' layers") {
  moe::test::test_device();
  StreamHolder st;
  int cases = 0;
  const std::string dir = std::string(MOEBENCH_FIXTURES_DIR) + "/configs/";
  const std::vector<int> ms = moe::test::ms_from_env("MOE_TEST_M", {1, 16});
  moe::test::TestPart part = moe::test::part_from_env();
  for (const char* model : {"DeepSeek-V3", "Qwen1.5-MoE-A2.7B", "Llama-4-Scout-17B-16E"})
    for (WeightFormat fmt : moe::test::formats_from_env()) {
      const MoeDims d = moe::load_shape_file(dir + model + "/config.json").dims(fmt);
      // The CPU reference costs slots * 3 * H * I a token: a couple of tokens a case.
      check_routing_features(model, d, ms, 2, st.s, part, &cases);
    }
  MESSAGE("committed configs: " << cases << " cases");
}
