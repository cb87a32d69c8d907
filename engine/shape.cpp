#include "engine/shape.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include "common/errors.hpp"
#include "common/json_file.hpp"

namespace moe {

using nlohmann::json;

namespace {

// Limits the kernels are built for; a shape outside them is refused before any device work.
constexpr int kMaxHidden = 65536;
constexpr int kMaxInter = 131072;
constexpr int kMaxExperts = 1024;
constexpr int kMaxTopK = 32;
constexpr int kSizeMultiple = 32;  // 16-byte loads of int4 (32 values) along every K

const std::set<std::string> kShapeFields{"name",      "hidden",         "moe_inter",
                                         "experts",   "top_k",          "shared_experts",
                                         "scoring",   "renormalize",    "description"};

int int_field(const json& j, const std::string& key, const std::string& origin, bool required,
              int fallback = 0) {
  if (!j.contains(key)) {
    if (required) throw UsageError(origin + ": field \"" + key + "\" is missing");
    return fallback;
  }
  const json& v = j.at(key);
  if (!v.is_number_integer())
    throw UsageError(origin + ": field \"" + key + "\" must be an integer, got " + v.dump());
  const auto x = v.get<long long>();
  if (x < INT32_MIN || x > INT32_MAX)
    throw UsageError(origin + ": field \"" + key + "\" = " + v.dump() + " is out of range");
  return static_cast<int>(x);
}

// An integer config value that must fit an int: a wider one is refused by name rather than
// silently wrapped into a different (possibly valid-looking) size.
int config_int(const json& v, const std::string& origin, const std::string& field) {
  const bool fits = v.is_number_unsigned()  ? v.get<unsigned long long>() <= INT32_MAX
                    : v.is_number_integer() ? v.get<long long>() >= INT32_MIN &&
                                                  v.get<long long>() <= INT32_MAX
                                            : false;
  if (!fits)
    throw UsageError(origin + ": field \"" + field + "\" = " + v.dump() + " is out of range");
  return v.get<int>();
}

kernels::Scoring parse_scoring(const json& v, const std::string& origin, const std::string& key) {
  if (!v.is_string())
    throw UsageError(origin + ": field \"" + key + "\" must be a string, got " + v.dump());
  const std::string s = v.get<std::string>();
  if (s == "softmax") return kernels::Scoring::softmax;
  if (s == "sigmoid") return kernels::Scoring::sigmoid;
  throw UsageError(origin + ": field \"" + key + "\" = \"" + s +
                   "\" is not a scoring function; valid: softmax, sigmoid");
}

// Where a Hugging Face config keeps MoE fields: the top level or a nested sub-config.
std::vector<const json*> hf_scopes(const json& j) {
  std::vector<const json*> scopes{&j};
  for (const char* nested : {"text_config", "language_config", "llm_config", "ffn_config",
                             "moe_config"})
    if (j.contains(nested) && j.at(nested).is_object()) scopes.push_back(&j.at(nested));
  return scopes;
}

struct Found {
  const json* value = nullptr;
  std::string field;
};

Found find_field(const std::vector<const json*>& scopes, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    for (const json* s : scopes)
      if (s->contains(n) && !s->at(n).is_null()) return {&s->at(n), n};
  return {};
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

kernels::MoeDims Shape::dims(kernels::WeightFormat format) const {
  kernels::MoeDims d;
  d.hidden = hidden;
  d.inter = moe_inter;
  d.experts = experts;
  d.shared = shared_experts;
  d.top_k = top_k;
  d.scoring = scoring;
  d.renormalize = renormalize;
  d.format = format;
  return d;
}

json Shape::to_json() const {
  return json{{"name", name},
              {"hidden", hidden},
              {"moe_inter", moe_inter},
              {"experts", experts},
              {"top_k", top_k},
              {"shared_experts", shared_experts},
              {"scoring", std::string(kernels::to_string(scoring))},
              {"renormalize", renormalize},
              {"description", description}};
}

void validate_shape(const Shape& s, const std::string& origin) {
  auto positive = [&](int v, const char* field, int max) {
    if (v <= 0)
      throw UsageError(origin + ": field \"" + field + "\" = " + std::to_string(v) +
                       " must be positive");
    if (v > max)
      throw UsageError(origin + ": field \"" + field + "\" = " + std::to_string(v) +
                       " is above the limit " + std::to_string(max));
  };
  positive(s.hidden, "hidden", kMaxHidden);
  positive(s.moe_inter, "moe_inter", kMaxInter);
  positive(s.experts, "experts", kMaxExperts);
  positive(s.top_k, "top_k", kMaxTopK);
  if (s.shared_experts < 0 || s.shared_experts > 64)
    throw UsageError(origin + ": field \"shared_experts\" = " + std::to_string(s.shared_experts) +
                     " must be in 0..64");
  if (s.top_k > s.experts)
    throw UsageError(origin + ": field \"top_k\" = " + std::to_string(s.top_k) +
                     " exceeds \"experts\" = " + std::to_string(s.experts));
  for (auto [v, field] : {std::pair{s.hidden, "hidden"}, std::pair{s.moe_inter, "moe_inter"}})
    if (v % kSizeMultiple != 0)
      throw UsageError(origin + ": field \"" + field + "\" = " + std::to_string(v) +
                       " must be a multiple of " + std::to_string(kSizeMultiple) +
                       " (the kernels load 16 bytes of int4 weights, 32 values, at a time)");
  if (s.name.empty()) throw UsageError(origin + ": field \"name\" must not be empty");
}

Shape parse_shape_json(const json& j, const std::string& origin) {
  if (!j.is_object()) throw UsageError(origin + ": a shape must be a JSON object");
  for (const auto& [key, _] : j.items())
    if (!kShapeFields.count(key))
      throw UsageError(origin + ": unknown field \"" + key + "\"; valid fields: name, hidden, "
                       "moe_inter, experts, top_k, shared_experts, scoring, renormalize, "
                       "description");
  Shape s;
  if (!j.contains("name") || !j.at("name").is_string())
    throw UsageError(origin + ": field \"name\" is missing or not a string");
  s.name = j.at("name").get<std::string>();
  s.hidden = int_field(j, "hidden", origin, true);
  s.moe_inter = int_field(j, "moe_inter", origin, true);
  s.experts = int_field(j, "experts", origin, true);
  s.top_k = int_field(j, "top_k", origin, true);
  s.shared_experts = int_field(j, "shared_experts", origin, false, 0);
  if (j.contains("scoring")) s.scoring = parse_scoring(j.at("scoring"), origin, "scoring");
  if (j.contains("renormalize")) {
    if (!j.at("renormalize").is_boolean())
      throw UsageError(origin + ": field \"renormalize\" must be true or false");
    s.renormalize = j.at("renormalize").get<bool>();
  }
  if (j.contains("description")) {
    if (!j.at("description").is_string())
      throw UsageError(origin + ": field \"description\" must be a string");
    s.description = j.at("description").get<std::string>();
  }
  s.source = origin;
  validate_shape(s, origin);
  return s;
}

Shape shape_from_hf_config(const json& j, const std::string& origin) {
  if (!j.is_object()) throw UsageError(origin + ": a config must be a JSON object");
  const auto scopes = hf_scopes(j);
  const std::vector<std::string> expert_names{"n_routed_experts", "num_experts",
                                              "num_local_experts", "moe_num_experts",
                                              "n_experts", "num_routed_experts"};
  const std::vector<std::string> topk_names{"num_experts_per_tok", "experts_per_token",
                                            "moe_top_k", "num_selected_experts", "top_k",
                                            "moe_k", "router_topk"};
  const std::vector<std::string> hidden_names{"hidden_size", "d_model", "n_embd", "dim"};
  const std::vector<std::string> inter_names{"moe_intermediate_size", "expert_intermediate_size",
                                             "ffn_hidden_size", "intermediate_size"};
  const std::vector<std::string> shared_names{"n_shared_experts", "num_shared_experts"};

  const Found experts = find_field(scopes, expert_names);
  if (!experts.value || !experts.value->is_number_integer() || experts.value->get<long long>() <= 0)
    throw UsageError(origin + ": not a Mixture-of-Experts config: no positive expert count in "
                     "any of " + join(expert_names) +
                     " (looked at the top level and in text_config, language_config, "
                     "llm_config, ffn_config, moe_config)");
  auto need_int = [&](const std::vector<std::string>& names, const char* what) {
    const Found f = find_field(scopes, names);
    if (!f.value)
      throw UsageError(origin + ": MoE config has no " + what + " (looked for " + join(names) +
                       ")");
    if (!f.value->is_number_integer())
      throw UsageError(origin + ": field \"" + f.field + "\" must be an integer, got " +
                       f.value->dump());
    return std::pair{config_int(*f.value, origin, f.field), f.field};
  };

  Shape s;
  std::vector<std::string> provenance;
  s.experts = config_int(*experts.value, origin, experts.field);
  provenance.push_back("experts<-" + experts.field);
  auto [top_k, topk_field] = need_int(topk_names, "top-k");
  s.top_k = top_k;
  provenance.push_back("top_k<-" + topk_field);
  auto [hidden, hidden_field] = need_int(hidden_names, "hidden size");
  s.hidden = hidden;
  provenance.push_back("hidden<-" + hidden_field);
  auto [inter, inter_field] = need_int(inter_names, "expert intermediate size");
  s.moe_inter = inter;
  provenance.push_back("moe_inter<-" + inter_field);

  if (const Found f = find_field(scopes, shared_names); f.value && f.value->is_number_integer()) {
    s.shared_experts = config_int(*f.value, origin, f.field);
    provenance.push_back("shared_experts<-" + f.field);
  } else if (const Found q = find_field(scopes, {"shared_expert_intermediate_size"});
             q.value && q.value->is_number_integer() && q.value->get<long long>() > 0 &&
             s.moe_inter > 0) {  // a non-positive moe_inter is refused by validate_shape below
    // Qwen2-MoE style: one shared MLP of its own width, expressed as whole experts of width I
    // (rounded up; 64-bit and clamped so no width can overflow or divide by zero).
    const long long width = q.value->get<long long>();
    s.shared_experts =
        static_cast<int>(std::min<long long>((width - 1) / s.moe_inter + 1, INT32_MAX));
    provenance.push_back("shared_experts<-shared_expert_intermediate_size/moe_inter");
  }
  if (const Found f = find_field(scopes, {"scoring_func"}); f.value)
    s.scoring = parse_scoring(*f.value, origin, f.field);
  if (const Found f = find_field(scopes, {"norm_topk_prob"}); f.value && f.value->is_boolean())
    s.renormalize = f.value->get<bool>();

  if (j.contains("_name_or_path") && j.at("_name_or_path").is_string() &&
      !j.at("_name_or_path").get<std::string>().empty())
    s.name = std::filesystem::path(j.at("_name_or_path").get<std::string>()).filename().string();
  else if (j.contains("model_type") && j.at("model_type").is_string())
    s.name = j.at("model_type").get<std::string>();
  else
    s.name = std::filesystem::path(origin).parent_path().filename().string();
  if (s.name.empty()) s.name = "config";
  s.description = "derived from " + origin + " (" + join(provenance) + ")";
  s.source = origin;
  validate_shape(s, origin);
  return s;
}

Shape load_shape_file(const std::filesystem::path& file) {
  const json j = read_json_file(file.string(), "shape file");
  // A moebench shape file has "moe_inter"; anything else is read as a model's config.json.
  if (j.is_object() && (j.contains("moe_inter") || (j.contains("top_k") && j.contains("experts"))))
    return parse_shape_json(j, file.string());
  return shape_from_hf_config(j, file.string());
}

std::vector<Shape> load_shape_library(const std::filesystem::path& dir) {
  std::vector<Shape> shapes;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError("shape folder '" + dir.string() + "' does not exist (set --fixtures)");
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json")
      shapes.push_back(parse_shape_json(read_json_file(entry.path().string(), "shape file"),
                                        entry.path().string()));
  std::sort(shapes.begin(), shapes.end(),
            [](const Shape& a, const Shape& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < shapes.size(); ++i)
    if (shapes[i].name == shapes[i - 1].name)
      throw UsageError("shape name '" + shapes[i].name + "' is defined twice: " +
                       shapes[i - 1].source + " and " + shapes[i].source);
  return shapes;
}

Shape resolve_shape(const std::string& spec, const std::vector<Shape>& library) {
  for (const Shape& s : library)
    if (s.name == spec) return s;
  const bool looks_like_path = spec.find('/') != std::string::npos ||
                               spec.ends_with(".json");
  if (looks_like_path) return load_shape_file(spec);
  std::string valid;
  for (const Shape& s : library) valid += (valid.empty() ? "" : ", ") + s.name;
  throw UsageError("unknown shape '" + spec + "'; valid: " + valid +
                   " (or a path to a shape file or a model's config.json)");
}

}  // namespace moe
