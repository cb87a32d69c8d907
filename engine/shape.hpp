#pragma once
#include <filesystem>
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
  int shared_experts = 0;  // S, each of intermediate size I
  kernels::Scoring scoring = kernels::Scoring::softmax;
  bool renormalize = true;
  std::string description;
  std::string source;  // the file it came from

  kernels::MoeDims dims(kernels::WeightFormat format) const;
  nlohmann::json to_json() const;
};

// Reads a moebench shape file. Errors (UsageError) name the file, the field and the rule:
// malformed JSON, unknown or missing fields, wrong types, non-positive sizes, top_k above the
// expert count, sizes the kernels' 16-byte loads cannot take.
Shape load_shape_file(const std::filesystem::path& file);
Shape parse_shape_json(const nlohmann::json& j, const std::string& origin);

// Derives a shape from a Hugging Face config.json, whichever naming the model family uses
// (n_routed_experts / num_experts / num_local_experts / ..., nested text_config, ffn_config).
// A config naming no experts is refused with the list of fields that were looked for.
Shape shape_from_hf_config(const nlohmann::json& j, const std::string& origin);

// Checks the rules every shape must meet; `origin` prefixes the message.
void validate_shape(const Shape& s, const std::string& origin);

// All shapes in a folder of shape files, sorted by name. Duplicate names are an error.
std::vector<Shape> load_shape_library(const std::filesystem::path& dir);

// `spec` is a shape name from the library, or a path to a shape file or a config.json.
// Unknown names raise UsageError listing the valid ones.
Shape resolve_shape(const std::string& spec, const std::vector<Shape>& library);

}  // namespace moe
