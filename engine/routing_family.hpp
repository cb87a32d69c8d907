#pragma once
#include <string>
#include <vector>

#include "kernels/moe/moe_types.hpp"

namespace moe {

// How one model family routes its MoE layer, as its Hugging Face transformers modelling code
// computes it. A config is read by its family's row: which keys the code reads and what it
// does without them, so two families that share a key name never share a meaning by accident.

// The shared-expert arrangement of a family's MoE block; `shared_key` names the config key.
enum class SharedExperts {
  none,              // no shared expert
  counted,           // `shared_key` MLPs of the routed width (DeepSeek's n_shared_experts)
  own_width,         // one MLP of width `shared_key` (0: none), e.g. shared_expert_intermediate_size
  one_routed_width,  // one MLP of the routed width, no key (Llama-4)
};

// What scales the shared experts' output.
enum class SharedGate {
  none,     // added as it is
  sigmoid,  // sigmoid(x . w) per token, w one more router row (Qwen2-MoE's shared_expert_gate)
};

// Whether the chosen experts' weights are divided by their sum.
enum class Renormalize {
  always,  // the code always divides (Mixtral; or a softmax over the top-k logits)
  never,   // the code never divides, whatever the config says
  by_key,  // norm_topk_prob, false when absent (the config class's default)
};

// How the top-k experts are chosen.
enum class Selection {
  greedy,    // top-k over all experts
  by_key,    // topk_method: greedy (absent) or group_limited_greedy, with n_group, topk_group
  noaux_tc,  // DeepSeek-V3: groups ranked by their two best biased scores, then top-k
};

struct RoutingFamily {
  std::string model_type;
  kernels::Scoring scoring;   // what the router's logits go through
  Selection selection;
  bool correction_bias;       // a per-expert bias added to the scores for the choice only
  Renormalize renormalize;
  bool routed_scaling;        // routed_scaling_factor scales the routed weights
  SharedExperts shared;
  std::string shared_key;     // the config key of the count or width ("" for none, one_routed_width)
  SharedGate shared_gate;
  bool weight_scales_input;   // the top-1 weight scales the expert's input (Llama-4)
  std::string activation;     // the experts' activation, as the code computes it
  std::string not_computed;   // non-empty: what the engine cannot compute for this family
  std::string source;         // the modelling file, a path in huggingface/transformers
};

// Every family in the table, in table order.
const std::vector<RoutingFamily>& routing_families();

// The family of `model_type`, or nullptr when it is not in the table.
const RoutingFamily* find_routing_family(const std::string& model_type);

// The table's model_type names, comma-separated (for messages).
std::string known_model_types();

// `--assume-routing FAMILY`: the row of a known model_type, to read a config whose model_type is
// not in the table. UsageError naming the value and the known ones otherwise.
const RoutingFamily& assumed_routing_family(const std::string& family);

std::string to_string(SharedExperts s);
std::string to_string(SharedGate g);
std::string to_string(Renormalize r);
std::string to_string(Selection s);

}  // namespace moe
