#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/moe/moe_types.hpp"

namespace moe {

// One MoE layer's dimensions, loaded from data (fixtures/shapes/*.json or a model's
// Hugging Face config.json), never compiled in.
struct Shape {
  std::string name;
  int hidden = 0;          // H
  int moe_inter = 0;       // I, per routed expert
  int experts = 0;         // routed experts E
  int top_k = 0;
  int shared_experts = 0;  // S, each of intermediate size I (or shared_expert_inter)
  kernels::Scoring scoring = kernels::Scoring::softmax;
  bool renormalize = true;

  // Routing and shared-expert features of real configs (docs/configs.md). Parsed and recorded
  // so nothing a config says is dropped, but the route kernel does not compute them yet:
  // not_computed() lists those a shape uses, and `moebench run` refuses such a shape. Each
  // default is the plain top-k layer the engine runs, and leaves the fingerprint unchanged.
  int n_group = 1;                     // DeepSeek-V3: experts in groups, groups ranked first
  int topk_group = 1;                  // groups kept before the top-k over their experts
  std::string topk_method = "greedy";  // "noaux_tc": a per-expert bias in the selection
  double routed_scaling_factor = 1.0;  // routed experts' weighted sum scaled by this
  int shared_expert_inter = 0;         // the shared experts' own width (0: moe_inter)
  bool shared_expert_gate = false;     // Qwen2-MoE: sigmoid(x . w) scales the shared output
  bool weight_scales_input = false;    // Llama-4: sigmoid(top-1 logit) scales the expert input
  // The routing table's family a config was read as (engine/routing_family.hpp), and whether
  // the user assumed it (--assume-routing) for a model_type the table does not have.
  std::string routing_family;
  bool routing_assumed = false;
  // Other features of the config the engine does not compute, each "key = value: what".
  std::vector<std::string> other_not_computed;

  std::string description;
  std::string source;  // the file it came from
  // The key each field was read from when the source names it otherwise (a config's
  // "intermediate_size" for moe_inter), so messages name the file's own key.
  std::map<std::string, std::string> source_keys;

  kernels::MoeDims dims(kernels::WeightFormat format) const;
  nlohmann::json to_json() const;
  // Every dimension and routing parameter (not the name, description or source), hashed:
  // 16 hex digits of FNV-1a over a canonical text. Two shapes that compute differently never
  // share it; a feature at its default adds nothing, so older shapes keep theirs.
  std::string fingerprint() const;
  // The features above this shape uses that the engine does not compute, each naming the key
  // of its source ("n_group = 8, topk_group = 4: grouped top-k"); empty for a runnable shape.
  std::vector<std::string> not_computed() const;
  // The key `field` was read from ("intermediate_size"), else `field` itself.
  std::string key_of(const std::string& field) const;
};

// Reads a moebench shape file. Errors (UsageError) name the file, the field and the rule:
// malformed JSON, unknown or missing fields, wrong types, non-positive sizes, top_k above the
// expert count, sizes the kernels' 16-byte loads cannot take.
// `assume_routing` (--assume-routing): the routing table's family to read a config of an
// unknown model_type as; empty refuses such a config.
Shape load_shape_file(const std::filesystem::path& file, const std::string& assume_routing = "");
Shape parse_shape_json(const nlohmann::json& j, const std::string& origin);

// Derives a shape from a Hugging Face config.json, whichever naming the model family uses
// (n_routed_experts / num_experts / num_local_experts / ..., nested text_config, ffn_config).
// A config naming no experts is refused with the list of fields that were looked for. The routing
// (scoring, selection, renormalisation, scaling, shared experts and their gate) is its
// model_type's row of the routing table (engine/routing_family.hpp); a model_type not in the
// table is refused naming it and the known ones, unless `assume_routing` names a row to use,
// which the shape records (routing_assumed).
Shape shape_from_hf_config(const nlohmann::json& j, const std::string& origin,
                           const std::string& assume_routing = "");

// Checks the rules every shape must meet; `origin` prefixes the message, which names each field
// by the key it was read from (Shape::key_of).
void validate_shape(const Shape& s, const std::string& origin);

// Raises UsageError when the shape uses a feature the engine does not compute (not_computed()),
// naming the key and saying it is not computed yet. `moebench run` calls it for every shape.
void refuse_not_computed(const Shape& s);

// All shapes in a folder of shape files, sorted by name. Duplicate names are an error.
std::vector<Shape> load_shape_library(const std::filesystem::path& dir);

// `spec` is a shape name from the library, or a path to a shape file or a config.json.
// Unknown names raise UsageError listing the valid ones.
Shape resolve_shape(const std::string& spec, const std::vector<Shape>& library,
                    const std::string& assume_routing = "");

}  // namespace moe
