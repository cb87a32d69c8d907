// The CPU reference's routing of real configs (kernels/moe/reference.hpp, docs/configs.md) on
// small cases checked by hand: DeepSeek's grouped choice where it differs from plain top-k, the
// noaux_tc correction bias that moves the choice but not the weights, routed_scaling_factor,
// Qwen2-MoE's shared gate, Llama-4's input scaling; and the shapes the configs give.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/shape.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/reference.hpp"

using namespace moe::kernels;

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// A small layer: H = 64, I = 32.
MoeDims small_dims(int experts, int shared, int top_k, Scoring scoring, bool renormalize) {
  MoeDims d;
  d.hidden = 64;
  d.inter = 32;
  d.experts = experts;
  d.shared = shared;
  d.top_k = top_k;
  d.scoring = scoring;
  d.renormalize = renormalize;
  return d;
}

// Eight experts in four groups of two, top-2, sigmoid scores renormalised.
MoeDims grouped_dims(TopKMethod method) {
  MoeDims d = small_dims(8, 0, 2, Scoring::sigmoid, true);
  d.topk_method = method;
  d.n_group = 4;
  d.topk_group = 2;
  return d;
}

// Group 0 holds the best expert but a poor second; groups 1 and 2 two good ones each.
// sigmoid: e0 .953, e1 .007 (group 0: .959 by its top two, .953 by its best); e2 = e3 .731
// (1.462); e4 = e5 .711 (1.422); group 3 near 0.
const double kLogits[8] = {3.0, -5.0, 1.0, 1.0, 0.9, 0.9, -5.0, -5.0};
const float kNoBias[8] = {0, 0, 0, 0, 0, 0, 0, 0};

}  // namespace

TEST_CASE("noaux_tc: groups ranked by their two best scores, top-k inside the kept groups") {
  MoeDims d = grouped_dims(TopKMethod::noaux_tc);
  int ids[2];
  double w[2];
  ref::route_token(d, kLogits, ids, w, kNoBias);
  // Kept groups 1 and 2; the tie e2 = e3 goes to the lower index.
  CHECK(ids[0] == 2);
  CHECK(ids[1] == 3);
  CHECK(w[0] == doctest::Approx(0.5));
  CHECK(w[1] == doctest::Approx(0.5));
  // Plain top-k takes the best expert, whose group is dropped here.
  MoeDims plain = d;
  plain.topk_method = TopKMethod::greedy;
  ref::route_token(plain, kLogits, ids, w);
  CHECK(ids[0] == 0);
  CHECK(ids[1] == 2);
  // Margin: the group cut (1.422 vs .959) is wide; the expert cut e3 vs e4 is .731 - .711.
  CHECK(ref::topk_margin(d, kLogits, kNoBias) == doctest::Approx(sigmoid(1.0) - sigmoid(0.9)));
  // noaux_tc cannot be routed without its bias.
  CHECK_THROWS(ref::route_token(d, kLogits, ids, w));
}

TEST_CASE("group_limited_greedy: groups ranked by their best score") {
  const MoeDims d = grouped_dims(TopKMethod::group_limited_greedy);
  int ids[2];
  double w[2];
  ref::route_token(d, kLogits, ids, w);  // no bias: DeepSeek-V2's method has none
  // Groups by their best: 0 (.953), 1 (.731), 2 (.711): groups 0 and 1 kept.
  CHECK(ids[0] == 0);
  CHECK(ids[1] == 2);
  CHECK(w[0] == doctest::Approx(sigmoid(3.0) / (sigmoid(3.0) + sigmoid(1.0))));
}

TEST_CASE("the correction bias moves the choice, never the weights; routed_scaling scales them") {
  MoeDims d = grouped_dims(TopKMethod::noaux_tc);
  d.n_group = 1;
  d.topk_group = 1;
  d.experts = 4;
  d.top_k = 1;
  d.renormalize = false;
  const double logits[4] = {1.0, 0.8, 0.0, 0.0};
  const float bias[4] = {0.0f, 0.1f, 0.0f, 0.0f};  // .690 + .1 beats .731
  int ids[1];
  double w[1];
  ref::route_token(d, logits, ids, w, kNoBias);
  CHECK(ids[0] == 0);
  CHECK(w[0] == doctest::Approx(sigmoid(1.0)));
  ref::route_token(d, logits, ids, w, bias);
  CHECK(ids[0] == 1);
  CHECK(w[0] == doctest::Approx(sigmoid(0.8)));  // the unbiased score
  d.routed_scaling = 2.5f;
  ref::route_token(d, logits, ids, w, bias);
  CHECK(w[0] == doctest::Approx(2.5 * sigmoid(0.8)));
  // Renormalised, then scaled: the grouped case's weights sum to the factor.
  MoeDims g = grouped_dims(TopKMethod::noaux_tc);
  g.routed_scaling = 2.5f;
  int gi[2];
  double gw[2];
  ref::route_token(g, kLogits, gi, gw, kNoBias);
  CHECK(gw[0] + gw[1] == doctest::Approx(2.5));
  // The generator's bias: E values in [-1/16, 1/16), only for noaux_tc, the same each call.
  const std::vector<float> b = selection_bias_host(g, 7);
  REQUIRE(b.size() == 8);
  for (float v : b) CHECK(std::abs(v) <= 1.0f / 16);
  CHECK(b == selection_bias_host(g, 7));
  CHECK(b != selection_bias_host(g, 8));
  CHECK(selection_bias_host(grouped_dims(TopKMethod::group_limited_greedy), 7).empty());
}

TEST_CASE("Qwen2-MoE shared gate: sigmoid(x . router row E) scales the shared experts' output") {
  const MoeDims d = small_dims(4, 2, 1, Scoring::softmax, true);  // a shared MLP twice the routed width
  const std::uint64_t seed = 21;
  std::vector<float> x(d.hidden);
  input_row_host(d, 5, 0, x.data());
  MoeDims gated = d;
  gated.shared_gate = true;
  CHECK(router_bytes(gated) == router_bytes(d) + 2 * d.hidden);  // one row more
  std::vector<float> row(d.hidden);
  router_row_host(gated, seed, d.experts, row.data());
  double dot = 0;
  for (int h = 0; h < d.hidden; ++h) dot += double(x[h]) * row[h];
  const std::vector<double> g = ref::shared_gate(gated, seed, x, 1);
  REQUIRE(g.size() == 1);
  CHECK(g[0] == doctest::Approx(sigmoid(dot)).epsilon(1e-12));
  CHECK(ref::shared_gate(d, seed, x, 1).empty());
  // out = routed + g * shared, the routed part unchanged.
  const std::vector<double> shared_only = ref::moe_layer(d, seed, x, 1, {2}, {0.0}, 1);
  const std::vector<double> ungated = ref::moe_layer(d, seed, x, 1, {2}, {0.4}, 1);
  const std::vector<double> out = ref::moe_layer(gated, seed, x, 1, {2}, {0.4}, 1);
  double diff = 0;
  for (int h = 0; h < d.hidden; ++h) {
    const double routed = ungated[h] - shared_only[h];
    CHECK(out[h] == doctest::Approx(routed + g[0] * shared_only[h]).epsilon(1e-9));
    diff += std::abs(out[h] - ungated[h]);
  }
  CHECK(diff > 0);
}

TEST_CASE("Llama-4: the router weight scales the expert's input, which SwiGLU does not commute with") {
  const MoeDims d = small_dims(4, 1, 1, Scoring::sigmoid, false);
  const std::uint64_t seed = 33;
  std::vector<float> x(d.hidden);
  input_row_host(d, 9, 0, x.data());
  const double w = 0.3;
  MoeDims llama = d;
  llama.scale_input = true;
  const std::vector<double> out = ref::moe_layer(llama, seed, x, 1, {1}, {w}, 1);
  // By hand: expert 1 on bf16(x * w), weight 1, plus the shared expert on x.
  std::vector<float> xs(d.hidden);
  ref::scaled_input_row(llama, x.data(), static_cast<float>(w), xs.data());
  for (int h = 0; h < d.hidden; ++h) CHECK(xs[h] == round_to_bf16(x[h] * 0.3f));
  const std::vector<double> shared = ref::moe_layer(d, seed, x, 1, {1}, {0.0}, 1);
  const std::vector<double> routed_scaled_input = ref::moe_layer(d, seed, xs, 1, {1}, {1.0}, 1);
  const std::vector<double> shared_on_xs = ref::moe_layer(d, seed, xs, 1, {1}, {0.0}, 1);
  const std::vector<double> output_scaled = ref::moe_layer(d, seed, x, 1, {1}, {w}, 1);
  double far = 0, norm = 0;
  for (int h = 0; h < d.hidden; ++h) {
    const double expect = routed_scaled_input[h] - shared_on_xs[h] + shared[h];
    CHECK(out[h] == doctest::Approx(expect).epsilon(1e-9));
    far += std::abs(out[h] - output_scaled[h]);
    norm += std::abs(out[h]);
  }
  CHECK(far > 1e-3 * norm);  // scaling the output instead is another layer
}

TEST_CASE("the configs' shapes compute their routing: the kernels' dims") {
  const std::string dir = std::string(MOEBENCH_FIXTURES_DIR) + "/configs/";
  const moe::Shape v3 = moe::load_shape_file(dir + "DeepSeek-V3/config.json");
  const MoeDims d3 = v3.dims(WeightFormat::bf16);
  CHECK(d3.topk_method == TopKMethod::noaux_tc);
  CHECK(d3.n_group == 8);
  CHECK(d3.topk_group == 4);
  CHECK(d3.routed_scaling == 2.5f);
  CHECK(d3.scoring == Scoring::sigmoid);
  CHECK(d3.renormalize);
  CHECK(d3.shared == 1);
  CHECK_FALSE(d3.plain_routing());
  const moe::Shape qwen = moe::load_shape_file(dir + "Qwen1.5-MoE-A2.7B/config.json");
  const MoeDims dq = qwen.dims(WeightFormat::bf16);
  CHECK(dq.shared == 4);  // 5632 = 4 x 1408: four experts of the routed width, the exact bytes
  CHECK(dq.inter == 1408);
  CHECK(dq.shared_gate);
  CHECK(dq.router_rows() == 61);
  CHECK(expert_weight_bytes(dq, TensorKind::gate_up) * dq.shared == 2ull * 5632 * 2048 * 2);
  const moe::Shape scout = moe::load_shape_file(dir + "Llama-4-Scout-17B-16E/config.json");
  const MoeDims dl = scout.dims(WeightFormat::bf16);
  CHECK(dl.scale_input);
  CHECK(dl.top_k == 1);
  CHECK(dl.shared == 1);
  CHECK(dl.inter == 8192);
  CHECK(dl.scoring == Scoring::sigmoid);
  CHECK_FALSE(dl.renormalize);
  // Plain configs keep the fast path.
  CHECK(moe::load_shape_file(dir + "Qwen3-30B-A3B/config.json").dims(WeightFormat::bf16).plain_routing());
  // greedy ignores groups (DeepSeek-V2's rule): n_group does not reach the kernels.
  moe::Shape greedy = v3;
  greedy.topk_method = "greedy";
  CHECK(greedy.dims(WeightFormat::bf16).n_group == 1);
}
