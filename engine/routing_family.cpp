#include "engine/routing_family.hpp"

#include "common/errors.hpp"

namespace moe {

namespace {

using kernels::Scoring;

constexpr const char* kModels = "src/transformers/models/";

std::string source(const std::string& family_dir, const std::string& file) {
  return kModels + family_dir + "/" + file;
}

// Each row as its file in huggingface/transformers computes the MoE block. A family is here only
// when that file was read; a config of any other model_type needs --assume-routing.
std::vector<RoutingFamily> build_table() {
  const std::string silu = "silu (hidden_act)";
  const auto none = SharedExperts::none;
  const auto ungated = SharedGate::none;
  return {
      // MixtralTopKRouter: softmax over all experts, top-k, always divided by the sum of the k.
      {"mixtral", Scoring::softmax, Selection::greedy, false, Renormalize::always, false, none, "",
       ungated, false, silu, "", source("mixtral", "modular_mixtral.py")},
      // MiniMaxSparseMoeBlock is MixtralSparseMoeBlock.
      {"minimax", Scoring::softmax, Selection::greedy, false, Renormalize::always, false, none, "",
       ungated, false, silu, "", source("minimax", "modular_minimax.py")},
      // JambaSparseMoeBlock: softmax, top-k, never divided.
      {"jamba", Scoring::softmax, Selection::greedy, false, Renormalize::never, false, none, "",
       ungated, false, silu, "", source("jamba", "modular_jamba.py")},
      // Qwen2MoeTopKRouter; one shared MLP of its own width, times sigmoid(shared_expert_gate(x)).
      {"qwen2_moe", Scoring::softmax, Selection::greedy, false, Renormalize::by_key, false,
       SharedExperts::own_width, "shared_expert_intermediate_size", SharedGate::sigmoid, false, silu,
       "", source("qwen2_moe", "modular_qwen2_moe.py")},
      // Qwen3MoeTopKRouter is Qwen2MoeTopKRouter; no shared expert.
      {"qwen3_moe", Scoring::softmax, Selection::greedy, false, Renormalize::by_key, false, none, "",
       ungated, false, silu, "", source("qwen3_moe", "modular_qwen3_moe.py")},
      // Qwen3NextSparseMoeBlock is Qwen2MoeSparseMoeBlock: the same sigmoid-gated shared expert.
      {"qwen3_next", Scoring::softmax, Selection::greedy, false, Renormalize::by_key, false,
       SharedExperts::own_width, "shared_expert_intermediate_size", SharedGate::sigmoid, false, silu,
       "", source("qwen3_next", "modular_qwen3_next.py")},
      // OlmoeSparseMoeBlock: softmax, top-k, norm_topk_prob; no shared expert.
      {"olmoe", Scoring::softmax, Selection::greedy, false, Renormalize::by_key, false, none, "",
       ungated, false, silu, "", source("olmoe", "modular_olmoe.py")},
      // DeepseekV2Moe: softmax; greedy or group_limited_greedy by topk_method; the weights times
      // routed_scaling_factor and never divided (norm_topk_prob is not read).
      {"deepseek_v2", Scoring::softmax, Selection::by_key, false, Renormalize::never, true,
       SharedExperts::counted, "n_shared_experts", ungated, false, silu, "",
       source("deepseek_v2", "modular_deepseek_v2.py")},
      // DeepseekV3MoE: sigmoid, e_score_correction_bias for the choice, groups by their two best,
      // norm_topk_prob, then routed_scaling_factor (scoring_func and topk_method are not read).
      {"deepseek_v3", Scoring::sigmoid, Selection::noaux_tc, true, Renormalize::by_key, true,
       SharedExperts::counted, "n_shared_experts", ungated, false, silu, "",
       source("deepseek_v3", "modular_deepseek_v3.py")},
      // Dots1MoE is DeepseekV3MoE.
      {"dots1", Scoring::sigmoid, Selection::noaux_tc, true, Renormalize::by_key, true,
       SharedExperts::counted, "n_shared_experts", ungated, false, silu, "",
       source("dots1", "modular_dots1.py")},
      // Glm4MoeTopkRouter is DeepseekV3TopkRouter; n_shared_experts MLPs, ungated.
      {"glm4_moe", Scoring::sigmoid, Selection::noaux_tc, true, Renormalize::by_key, true,
       SharedExperts::counted, "n_shared_experts", ungated, false, silu, "",
       source("glm4_moe", "modular_glm4_moe.py")},
      // Ernie4_5_MoeSparseMoeBlock: softmax; the top-k of softmax + e_score_correction_bias (one
      // group); the unbiased weights divided by max(sum, moe_norm_min), the sum itself for any
      // softmax; moe_num_shared_experts MLPs, ungated.
      {"ernie4_5_moe", Scoring::softmax, Selection::noaux_tc, true, Renormalize::always, false,
       SharedExperts::counted, "moe_num_shared_experts", ungated, false, silu, "",
       source("ernie4_5_moe", "modular_ernie4_5_moe.py")},
      // Llama4Router: top-k of the logits, their sigmoid scales the expert's input; a shared
      // expert of the routed width. The composite config ("llama4") nests "llama4_text".
      {"llama4_text", Scoring::sigmoid, Selection::greedy, false, Renormalize::never, false,
       SharedExperts::one_routed_width, "", ungated, true, silu, "",
       source("llama4", "modeling_llama4.py")},
      {"llama4", Scoring::sigmoid, Selection::greedy, false, Renormalize::never, false,
       SharedExperts::one_routed_width, "", ungated, true, silu, "",
       source("llama4", "modeling_llama4.py")},
      // GraniteMoeTopKGating: top-k of the logits, softmax over those k (= softmax, renormalised).
      {"granitemoe", Scoring::softmax, Selection::greedy, false, Renormalize::always, false, none,
       "", ungated, false, silu, "", source("granitemoe", "modeling_granitemoe.py")},
      // GraniteMoe's routing plus one shared MLP of shared_intermediate_size, added ungated.
      {"granitemoeshared", Scoring::softmax, Selection::greedy, false, Renormalize::always, false,
       SharedExperts::own_width, "shared_intermediate_size", ungated, false, silu, "",
       source("granitemoeshared", "modular_granitemoeshared.py")},
      // GptOssTopKRouter: top-k of the logits plus a router bias, softmax over those k; experts
      // with biases and a clamped SwiGLU.
      {"gpt_oss", Scoring::softmax, Selection::greedy, false, Renormalize::always, false, none, "",
       ungated, false,
       "clamped SwiGLU: gate <= 7, -7 <= up <= 7, gate * sigmoid(1.702 gate) * (up + 1)",
       "model_type \"gpt_oss\": a clamped SwiGLU (limit 7, alpha 1.702, up + 1), expert biases "
       "and a router bias",
       source("gpt_oss", "modular_gpt_oss.py")},
      // PhimoeTopKRouter: sparsemixer, two masked softmaxes, one per chosen expert.
      {"phimoe", Scoring::softmax, Selection::greedy, false, Renormalize::always, false, none, "",
       ungated, false, silu,
       "model_type \"phimoe\": SparseMixer top-2 weights (router_jitter_noise), not a softmax "
       "over the top-k",
       source("phimoe", "modular_phimoe.py")},
      // HunYuanTopKGate: softmax, top-k, renormalised, but each expert takes at most
      // max(k, k * tokens / experts) tokens and drops the rest; an ungated shared MLP.
      {"hunyuan_v1_moe", Scoring::softmax, Selection::greedy, false, Renormalize::always, false,
       none, "", ungated, false, silu,
       "model_type \"hunyuan_v1_moe\": an expert capacity (tokens beyond max(k, k * tokens / "
       "experts) per expert are dropped) and a shared MLP of intermediate_size",
       source("hunyuan_v1_moe", "modular_hunyuan_v1_moe.py")},
  };
}

}  // namespace

const std::vector<RoutingFamily>& routing_families() {
  static const std::vector<RoutingFamily> table = build_table();
  return table;
}

const RoutingFamily* find_routing_family(const std::string& model_type) {
  for (const RoutingFamily& f : routing_families())
    if (f.model_type == model_type) return &f;
  return nullptr;
}

std::string known_model_types() {
  std::string out;
  for (const RoutingFamily& f : routing_families()) out += (out.empty() ? "" : ", ") + f.model_type;
  return out;
}

const RoutingFamily& assumed_routing_family(const std::string& family) {
  if (const RoutingFamily* f = find_routing_family(family)) return *f;
  throw UsageError("--assume-routing '" + family + "' is not a model_type of the routing table; "
                   "valid: " + known_model_types());
}

std::string to_string(SharedExperts s) {
  switch (s) {
    case SharedExperts::none: return "none";
    case SharedExperts::counted: return "counted";
    case SharedExperts::own_width: return "one of its own width";
    case SharedExperts::one_routed_width: return "one of the routed width";
  }
  return "?";
}

std::string to_string(SharedGate g) { return g == SharedGate::sigmoid ? "sigmoid" : "none"; }

std::string to_string(Renormalize r) {
  switch (r) {
    case Renormalize::always: return "always";
    case Renormalize::never: return "never";
    case Renormalize::by_key: return "norm_topk_prob (default false)";
  }
  return "?";
}

std::string to_string(Selection s) {
  switch (s) {
    case Selection::greedy: return "greedy";
    case Selection::by_key: return "topk_method (default greedy)";
    case Selection::noaux_tc: return "noaux_tc";
  }
  return "?";
}

}  // namespace moe
