// CPU-only checks of the MoE kernels' host side: generator, bf16 rounding, int4 packing,
// top-k tie-breaking, grouping and the layer reference. Runs in CI without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "common/errors.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/forward.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/generator.hpp"
#include "kernels/moe/int4_format.hpp"
#include "kernels/moe/int4_mma_fragments.hpp"
#include "kernels/moe/reference.hpp"

using namespace moe::kernels;

namespace {
MoeDims tiny_dims(WeightFormat f = WeightFormat::bf16) {
  MoeDims d;
  d.hidden = 64;
  d.inter = 32;
  d.experts = 8;
  d.shared = 1;
  d.top_k = 2;
  d.format = f;
  return d;
}
}  // namespace

TEST_CASE("to_string names formats and scoring") {
  CHECK(to_string(WeightFormat::bf16) == "bf16");
  CHECK(to_string(WeightFormat::int4) == "int4");
  CHECK(to_string(Scoring::softmax) == "softmax");
  CHECK(to_string(Scoring::sigmoid) == "sigmoid");
}

TEST_CASE("bf16 round to nearest even") {
  CHECK(float_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(float_to_bf16_bits(-2.0f) == 0xC000);
  // 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: ties to even (down to 1).
  CHECK(float_to_bf16_bits(1.0f + 1.0f / 256) == 0x3F80);
  // 1 + 3 * 2^-8 is half way between 1 + 2^-7 (odd mantissa) and 1 + 2^-6: up to even.
  CHECK(float_to_bf16_bits(1.0f + 3.0f / 256) == 0x3F82);
  // Just above the half way point rounds up.
  CHECK(float_to_bf16_bits(bits_float(0x3F808001u)) == 0x3F81);
  CHECK(float_to_bf16_bits(bits_float(0x3F807FFFu)) == 0x3F80);
  // Overflow to infinity, NaN stays NaN, signed zero kept.
  CHECK(float_to_bf16_bits(bits_float(0x7F7FFFFFu)) == 0x7F80);
  CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
  for (std::uint32_t b = 0; b < 0x7F80; b += 37) CHECK(float_to_bf16_bits(bf16_bits_to_float(b)) == b);
}

TEST_CASE("generator is deterministic, keyed and well spread") {
  const std::uint64_t k1 = stream_key(42, TensorKind::gate_up, 3);
  CHECK(k1 == stream_key(42, TensorKind::gate_up, 3));
  CHECK(k1 != stream_key(43, TensorKind::gate_up, 3));
  CHECK(k1 != stream_key(42, TensorKind::down, 3));
  CHECK(k1 != stream_key(42, TensorKind::gate_up, 4));
  const int n = 200000;
  double sum = 0, sq = 0;
  float lo = 1, hi = -1;
  int q_hist[16] = {};
  for (int i = 0; i < n; ++i) {
    const float v = hash_to_pm1(element_hash(k1, i));
    sum += v;
    sq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++q_hist[hash_to_q4(element_hash(k1, i)) + 8];
  }
  CHECK(lo >= -1.0f);
  CHECK(hi < 1.0f);
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(std::abs(sq / n - 1.0 / 3) < 0.01);  // variance of U[-1, 1)
  for (int b = 0; b < 16; ++b) CHECK(std::abs(q_hist[b] - n / 16.0) < 0.05 * n / 16);
  // Adjacent indices and streams are uncorrelated.
  const std::uint64_t k2 = stream_key(42, TensorKind::gate_up, 4);
  double c = 0, c2 = 0;
  for (int i = 0; i < n; ++i) {
    c += hash_to_pm1(element_hash(k1, i)) * hash_to_pm1(element_hash(k1, i + 1));
    c2 += hash_to_pm1(element_hash(k1, i)) * hash_to_pm1(element_hash(k2, i));
  }
  CHECK(std::abs(c / n) < 0.01);
  CHECK(std::abs(c2 / n) < 0.01);
}

TEST_CASE("generated weights have the documented scale") {
  MoeDims d = tiny_dims();
  d.hidden = 2048;
  std::vector<float> row(d.hidden);
  double sq = 0;
  for (int r = 0; r < 16; ++r) {
    expert_row_host(d, TensorKind::gate_up, 7, 1, r, row.data());
    for (float v : row) {
      CHECK(std::abs(v) <= 1.0f / std::sqrt(2048.0f) + 1e-6f);
      CHECK(round_to_bf16(v) == v);  // stored as bf16
      sq += v * v;
    }
  }
  CHECK(std::abs(sq / (16 * 2048) * 2048 - 1.0 / 3) < 0.02);
  d.format = WeightFormat::int4;
  expert_row_host(d, TensorKind::gate_up, 7, 1, 0, row.data());
  double sq4 = 0;
  for (float v : row) sq4 += v * v;
  CHECK(sq4 / 2048 * 2048 > 0.1);
  CHECK(sq4 / 2048 * 2048 < 0.8);
}

TEST_CASE("int4 pack and unpack round trip, documented bit positions") {
  const std::size_t rows = 3;
  const int k = 96;  // not a multiple of 128: partial last group
  std::vector<int> q(rows * k);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int>(i * 7 % 16) - 8;
  const std::vector<std::uint32_t> packed = int4_pack(q, rows, k);
  CHECK(packed.size() == rows * k / 8);
  CHECK(int4_unpack_all(packed, rows, k) == q);
  // Element k of a row lives in word k/8, bits 4*(k%8), as q + 8.
  CHECK(((packed[0] >> 0) & 0xF) == static_cast<std::uint32_t>(q[0] + 8));
  CHECK(((packed[1] >> 12) & 0xF) == static_cast<std::uint32_t>(q[11] + 8));
  CHECK(int4_groups(2880) == 23);
  CHECK(int4_groups(128) == 1);
  CHECK(int4_packed_bytes(2, 256) == 256);
  CHECK(int4_scale_bytes(2, 2880) == 2 * 23 * 2);
  // Dequantisation through the packed form equals the host row derivation.
  MoeDims d = tiny_dims(WeightFormat::int4);
  d.hidden = 160;  // two groups, the last partial
  const std::uint64_t key = stream_key(5, TensorKind::gate_up, 2);
  const std::uint64_t skey = stream_key(5, TensorKind::int4_scale_gate_up, 2);
  std::vector<int> qr(d.hidden);
  for (int c = 0; c < d.hidden; ++c) qr[c] = generated_q4(key, 4, d.hidden, c);
  const auto pk = int4_pack(qr, 1, d.hidden);
  std::uint16_t sc[2] = {generated_scale(skey, 4, d.hidden, 0, int4_scale_base(d.hidden)),
                         generated_scale(skey, 4, d.hidden, 1, int4_scale_base(d.hidden))};
  std::vector<float> row(d.hidden);
  expert_row_host(d, TensorKind::gate_up, 5, 2, 4, row.data());
  for (int c = 0; c < d.hidden; ++c) CHECK(int4_dequant(pk.data(), sc, 0, d.hidden, c) == row[c]);
}

TEST_CASE("top-k tie-break: value descending, index ascending; renormalised weights") {
  MoeDims d = tiny_dims();
  d.experts = 6;
  d.top_k = 3;
  const double logits[6] = {0.5, 1.0, 0.5, 1.0, 0.5, -2.0};
  int ids[3];
  double w[3];
  ref::route_token(d, logits, ids, w);
  CHECK(ids[0] == 1);
  CHECK(ids[1] == 3);
  CHECK(ids[2] == 0);  // three-way tie at 0.5: lowest index
  CHECK(std::abs(w[0] + w[1] + w[2] - 1.0) < 1e-12);
  CHECK(w[0] == doctest::Approx(w[1]));
  CHECK(w[0] > w[2]);
  CHECK(ref::topk_margin(d, logits) == 0.0);
  d.scoring = Scoring::sigmoid;
  d.renormalize = false;
  ref::route_token(d, logits, ids, w);
  CHECK(w[0] == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))));
  d.renormalize = true;
  ref::route_token(d, logits, ids, w);
  CHECK(std::abs(w[0] + w[1] + w[2] - 1.0) < 1e-12);
  // Softmax without renormalisation: weights are the full-softmax probabilities.
  d.scoring = Scoring::softmax;
  d.renormalize = false;
  ref::route_token(d, logits, ids, w);
  double z = 0;
  for (double l : logits) z += std::exp(l);
  CHECK(w[0] == doctest::Approx(std::exp(1.0) / z));
}

TEST_CASE("grouping orders pairs by expert, then pair order; shared experts take every token") {
  MoeDims d = tiny_dims();
  d.experts = 4;
  d.top_k = 2;
  d.shared = 1;
  const int m = 3;
  const std::vector<int> ids = {2, 0, 0, 3, 2, 0};  // t0: 2,0  t1: 0,3  t2: 2,0
  const ref::Grouping g = ref::group_pairs(d, m, ids);
  // slots = 3; pair index = t * 3 + s
  CHECK(g.counts == std::vector<int>{3, 0, 2, 1, 3});
  CHECK(g.offsets == std::vector<int>{0, 3, 3, 5, 6, 9});
  CHECK(g.active == std::vector<int>{0, 2, 3, 4});
  CHECK(g.sorted_pairs == std::vector<int>{1, 3, 7, /*e2*/ 0, 6, /*e3*/ 4, /*shared*/ 2, 5, 8});
  for (int i = 0; i < 9; ++i) CHECK(g.sorted_pairs[g.pair_position[i]] == i);
}

TEST_CASE("layer reference: one expert by hand, linearity in the weights, router logits") {
  MoeDims d = tiny_dims();
  d.experts = 2;
  d.top_k = 1;
  d.shared = 0;
  const std::uint64_t seed = 11;
  std::vector<float> x(d.hidden);
  input_row_host(d, 99, 0, x.data());
  // By hand: out = w * W_down (silu(W_g x) * (W_u x)) with h rounded to bf16.
  std::vector<float> row(d.hidden);
  std::vector<double> h(d.inter);
  for (int j = 0; j < d.inter; ++j) {
    double g = 0, u = 0;
    expert_row_host(d, TensorKind::gate_up, seed, 1, j, row.data());
    for (int k = 0; k < d.hidden; ++k) g += double(x[k]) * row[k];
    expert_row_host(d, TensorKind::gate_up, seed, 1, d.inter + j, row.data());
    for (int k = 0; k < d.hidden; ++k) u += double(x[k]) * row[k];
    h[j] = round_to_bf16(static_cast<float>(g / (1 + std::exp(-g)) * u));
  }
  std::vector<double> expect(d.hidden);
  std::vector<float> drow(d.inter);
  for (int n = 0; n < d.hidden; ++n) {
    expert_row_host(d, TensorKind::down, seed, 1, n, drow.data());
    double s = 0;
    for (int j = 0; j < d.inter; ++j) s += h[j] * drow[j];
    expect[n] = 0.25 * s;
  }
  const std::vector<double> out = ref::moe_layer(d, seed, x, 1, {1}, {0.25}, 1);
  double norm = 0;
  for (int n = 0; n < d.hidden; ++n) {
    CHECK(out[n] == doctest::Approx(expect[n]).epsilon(1e-12));
    norm += out[n] * out[n];
  }
  CHECK(norm > 0);
  // Linear in the routing weight.
  const std::vector<double> out2 = ref::moe_layer(d, seed, x, 1, {1}, {0.5}, 1);
  for (int n = 0; n < d.hidden; ++n) CHECK(out2[n] == doctest::Approx(2 * out[n]).epsilon(1e-12));
  // Two tokens on two experts equal the two one-token layers side by side.
  std::vector<float> x2(2 * d.hidden);
  input_row_host(d, 99, 0, x2.data());
  input_row_host(d, 99, 1, x2.data() + d.hidden);
  const auto both = ref::moe_layer(d, seed, x2, 2, {1, 0}, {0.25, 1.0}, 2);
  for (int n = 0; n < d.hidden; ++n) CHECK(both[n] == doctest::Approx(out[n]).epsilon(1e-12));
  // Router logits are the dot products with the generated router plus the bias.
  const float bias[2] = {0.5f, -1.0f};
  const auto lg = ref::router_logits(d, seed, x, 1, bias);
  router_row_host(d, seed, 1, row.data());
  double l1 = 0;
  for (int k = 0; k < d.hidden; ++k) l1 += double(x[k]) * row[k];
  CHECK(lg[1] == doctest::Approx(l1 - 1.0).epsilon(1e-12));
}

TEST_CASE("forward argument validation and scratch layout (host only)") {
  MoeDims d = tiny_dims();
  const int m = 5;
  const ScratchLayout l = scratch_layout(d, m);
  CHECK(l.slots == d.top_k + d.shared);
  CHECK(l.pairs == m * l.slots);
  CHECK(l.total == forward_scratch_bytes(d, m));
  // Offsets are 256-byte aligned, increasing, and the last region ends inside the total.
  const std::size_t offs[] = {l.logits, l.topk_ids, l.topk_weights, l.expert_counts, l.expert_offsets,
                              l.num_active, l.active_experts, l.num_tiles, l.tiles, l.sorted_pairs,
                              l.pair_position, l.membership, l.membership_prefix, l.done_counters,
                              l.h, l.down_out};
  for (std::size_t i = 0; i < std::size(offs); ++i) {
    CHECK(offs[i] % 256 == 0);
    if (i) CHECK(offs[i] > offs[i - 1]);
  }
  CHECK(l.down_out + sizeof(float) * l.pairs * d.hidden <= l.total);
  CHECK(forward_scratch_bytes(d, 64) > forward_scratch_bytes(d, 1));

  // Validation never touches the pointers: fake, suitably aligned addresses are enough.
  alignas(256) static char fake[512];
  const void* table[1] = {fake};
  MoeForwardArgs a;
  a.dims = d;
  a.m = m;
  a.x = reinterpret_cast<const __nv_bfloat16*>(fake);
  a.out = reinterpret_cast<__nv_bfloat16*>(fake);
  a.router = reinterpret_cast<const __nv_bfloat16*>(fake);
  a.experts.gate_up = table;
  a.experts.down = table;
  a.scratch = fake;
  a.scratch_bytes = l.total;
  CHECK_NOTHROW(validate_forward_args(a));
  MoeForwardArgs b = a;
  b.scratch_bytes = 1000;
  CHECK_THROWS_WITH_AS(validate_forward_args(b),
                       doctest::Contains(("needs " + std::to_string(l.total)).c_str()), moe::Error);
  CHECK_THROWS_WITH_AS(validate_forward_args(b), doctest::Contains("1000"), moe::Error);
  b = a;
  b.dims.hidden = 100;
  CHECK_THROWS_WITH_AS(validate_forward_args(b), doctest::Contains("hidden 100"), moe::Error);
  b = a;
  b.dims.top_k = 9;
  CHECK_THROWS_WITH_AS(validate_forward_args(b), doctest::Contains("top_k 9"), moe::Error);
  b = a;
  b.dims.format = WeightFormat::int4;  // needs scale tables
  CHECK_THROWS_WITH_AS(validate_forward_args(b), doctest::Contains("int4"), moe::Error);
  b = a;
  b.m = 0;
  CHECK_THROWS_WITH_AS(validate_forward_args(b), doctest::Contains("m 0"), moe::Error);
  CHECK(decode_max_tokens(WeightFormat::bf16, Int4Decode::automatic) >= 1);
  CHECK(to_string(ForwardPath::automatic) == "auto");
}

// The int4 decode path reaches M=8 only with the tensor-core decode warp available: the SIMT
// int4 kernels spill registers from 4 tokens a pass and lose to the tensor-core tiles there.
TEST_CASE("int4's decode bound follows the int4 decode kernels") {
  CHECK(decode_max_tokens(WeightFormat::int4, Int4Decode::automatic) == kDecodeMaxTokensInt4);
  CHECK(decode_max_tokens(WeightFormat::int4, Int4Decode::tensor_cores) == kDecodeMaxTokensInt4);
  CHECK(decode_max_tokens(WeightFormat::int4, Int4Decode::simt) == kDecodeMaxTokensInt4Simt);
  CHECK(decode_max_tokens(WeightFormat::bf16, Int4Decode::simt) == kDecodeMaxTokensBf16);
  CHECK(kDecodeMaxTokensInt4Simt < kDecodeMaxTokensInt4);
}

// The int4 tensor-core decode warp's fragment mapping (int4_mma_fragments.hpp), emulated.
// Lanes build their A (activations) and B (codes) registers as the kernel does; the mma is
// evaluated from the PTX fragment layout of m16n8k16 (lane T: A row T / 4, B column T / 4,
// logical k 2c, 2c + 1 in one register and 2c + 8, 2c + 9 in another, c = T % 4). Over a
// 128-k group's 8 steps every (token, row) must get the plain dot product of its 128 k.
TEST_CASE("int4 mma fragments: a group's 8 steps give each token's dot product with each row") {
  using namespace int4_mma;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> qd(-8, 7);
  std::uniform_real_distribution<float> xd(-2.f, 2.f);
  constexpr int kK = 128, kCols = 8, kTok = 8;
  std::vector<int> q(kCols * kK);
  for (int& v : q) v = qd(rng);
  const std::vector<std::uint32_t> packed = int4_pack(q, kCols, kK);  // [8][16] words
  std::vector<std::uint16_t> x(kTok * kK);
  for (auto& v : x) v = float_to_bf16_bits(xd(rng));
  auto lo = [](std::uint32_t w) { return bf16_bits_to_float(static_cast<std::uint16_t>(w & 0xFFFFu)); };
  auto hi = [](std::uint32_t w) { return bf16_bits_to_float(static_cast<std::uint16_t>(w >> 16)); };
  double got[kTok][kCols] = {};
  for (int s = 0; s < 8; ++s) {
    float a[32][2], a8[32][2], b[32][2], b8[32][2];  // per lane: logical (2c, 2c+1) and (2c+8, 2c+9)
    for (int lane = 0; lane < 32; ++lane) {
      const int n = lane / 4, c = lane % 4, word = c * 4 + s / 2;  // the lane's 32 k: words 4c..4c+3
      std::uint32_t xw[4];
      for (int i = 0; i < 4; ++i)
        xw[i] = x[n * kK + word * 8 + 2 * i] | (static_cast<std::uint32_t>(x[n * kK + word * 8 + 2 * i + 1]) << 16);
      const std::uint32_t pa = activation_pair(xw, pair_of(s, 0)), pa8 = activation_pair(xw, pair_of(s, 1));
      const std::uint32_t w = packed[n * (kK / 8) + word];
      const std::uint32_t pb = weight_pair_biased(w, pair_of(s, 0)), pb8 = weight_pair_biased(w, pair_of(s, 1));
      a[lane][0] = lo(pa), a[lane][1] = hi(pa), a8[lane][0] = lo(pa8), a8[lane][1] = hi(pa8);
      // The kernel subtracts 136 in bf16 (exact): here in float.
      b[lane][0] = lo(pb) - 136.f, b[lane][1] = hi(pb) - 136.f, b8[lane][0] = lo(pb8) - 136.f, b8[lane][1] = hi(pb8) - 136.f;
    }
    for (int t = 0; t < kTok; ++t)
      for (int col = 0; col < kCols; ++col)
        for (int kl = 0; kl < 16; ++kl) {
          const int c = (kl % 8) / 2, e = kl % 2;
          const float av = kl < 8 ? a[4 * t + c][e] : a8[4 * t + c][e];
          const float bv = kl < 8 ? b[4 * col + c][e] : b8[4 * col + c][e];
          got[t][col] += static_cast<double>(av) * bv;
        }
  }
  for (int t = 0; t < kTok; ++t)
    for (int col = 0; col < kCols; ++col) {
      double want = 0;
      for (int k = 0; k < kK; ++k) want += static_cast<double>(bf16_bits_to_float(x[t * kK + k])) * q[col * kK + k];
      CAPTURE(t);
      CAPTURE(col);
      CHECK(got[t][col] == doctest::Approx(want).epsilon(1e-12));
    }
  // The documented map covers each of a lane's 32 k once per group.
  std::vector<int> seen(32, 0);
  for (int s = 0; s < 8; ++s)
    for (int e = 0; e < 4; ++e) ++seen[k_of(s, e)];
  CHECK(std::count(seen.begin(), seen.end(), 1) == 32);
}
