#include "engine/shape.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "engine/routing_family.hpp"

namespace moe {

using nlohmann::json;

namespace {

// Limits the kernels are built for; a shape outside them is refused before any device work.
constexpr int kMaxHidden = 65536;
constexpr int kMaxInter = 131072;
constexpr int kMaxExperts = 1024;
constexpr int kMaxTopK = 32;
constexpr int kSizeMultiple = 32;  // 16-byte loads of int4 (32 values) along every K

const std::set<std::string> kShapeFields{
    "name",        "hidden",          "moe_inter",           "experts",
    "top_k",       "shared_experts",  "scoring",             "renormalize",
    "description", "n_group",         "topk_group",          "topk_method",
    "routed_scaling_factor",          "shared_expert_inter", "shared_expert_gate",
    "weight_scales_input",            "not_computed",        "routing_assumed"};

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

// Typed reads that name the key: a config's "true" in quotes is a string, not a boolean.
bool bool_value(const json& v, const std::string& origin, const std::string& key) {
  if (!v.is_boolean())
    throw UsageError(origin + ": field \"" + key + "\" must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::string string_value(const json& v, const std::string& origin, const std::string& key) {
  if (!v.is_string())
    throw UsageError(origin + ": field \"" + key + "\" must be a string, got " + v.dump());
  return v.get<std::string>();
}

double number_value(const json& v, const std::string& origin, const std::string& key) {
  if (!v.is_number())
    throw UsageError(origin + ": field \"" + key + "\" must be a number, got " + v.dump());
  return v.get<double>();
}

std::string number_value_text(const json& v, const std::string& origin, const std::string& key) {
  (void)number_value(v, origin, key);
  return v.dump();
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

namespace {

// The topk_method names the engine computes; others stay refused (not_computed).
bool known_topk_method(const std::string& m, kernels::TopKMethod* out = nullptr) {
  for (kernels::TopKMethod t : {kernels::TopKMethod::greedy, kernels::TopKMethod::group_limited_greedy,
                                kernels::TopKMethod::noaux_tc})
    if (m == kernels::to_string(t)) {
      if (out) *out = t;
      return true;
    }
  return false;
}

// The route kernel's grouped choice gives a lane of a warp to each group.
constexpr int kMaxGroups = 32;

}  // namespace

kernels::MoeDims Shape::dims(kernels::WeightFormat format) const {
  kernels::MoeDims d;
  d.hidden = hidden;
  d.inter = moe_inter;
  d.experts = experts;
  // A shared MLP of its own width is that many experts of the routed width (not_computed
  // refuses a width that is not a whole multiple): the same weights, the same bytes.
  d.shared = shared_expert_inter != 0 && shared_expert_inter % moe_inter == 0
                 ? shared_experts * (shared_expert_inter / moe_inter)
                 : shared_experts;
  d.top_k = top_k;
  d.scoring = scoring;
  d.renormalize = renormalize;
  d.format = format;
  known_topk_method(topk_method, &d.topk_method);
  if (d.grouped()) {
    d.n_group = n_group;
    d.topk_group = topk_group;
  }
  d.routed_scaling = static_cast<float>(routed_scaling_factor);
  d.shared_gate = shared_expert_gate;
  d.scale_input = weight_scales_input;
  return d;
}

json Shape::to_json() const {
  json j{{"name", name},
         {"hidden", hidden},
         {"moe_inter", moe_inter},
         {"experts", experts},
         {"top_k", top_k},
         {"shared_experts", shared_experts},
         {"scoring", std::string(kernels::to_string(scoring))},
         {"renormalize", renormalize},
         {"description", description}};
  // The routing features only where a shape uses them: absent means the default, so reports
  // and case files of plain shapes read as before.
  if (n_group != 1) j["n_group"] = n_group;
  if (topk_group != 1) j["topk_group"] = topk_group;
  if (topk_method != "greedy") j["topk_method"] = topk_method;
  if (routed_scaling_factor != 1.0) j["routed_scaling_factor"] = routed_scaling_factor;
  if (shared_expert_inter != 0) j["shared_expert_inter"] = shared_expert_inter;
  if (shared_expert_gate) j["shared_expert_gate"] = true;
  if (weight_scales_input) j["weight_scales_input"] = true;
  if (!other_not_computed.empty()) j["not_computed"] = other_not_computed;
  // Only an assumption is written: a report must say its routing was not the config's own.
  if (routing_assumed) j["routing_assumed"] = routing_family;
  return j;
}

std::string Shape::fingerprint() const {
  std::string text = "h" + std::to_string(hidden) + ";i" + std::to_string(moe_inter) + ";e" +
                     std::to_string(experts) + ";k" + std::to_string(top_k) + ";s" +
                     std::to_string(shared_experts) + ";" +
                     std::string(kernels::to_string(scoring)) + (renormalize ? ";norm" : ";raw");
  const json extra = to_json();
  for (const char* k : {"n_group", "topk_group", "topk_method", "routed_scaling_factor",
                        "shared_expert_inter", "shared_expert_gate", "weight_scales_input",
                        "not_computed"})
    if (extra.contains(k)) text += std::string(";") + k + "=" + extra.at(k).dump();
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string Shape::key_of(const std::string& field) const {
  auto it = source_keys.find(field);
  return it == source_keys.end() ? field : it->second;
}

std::vector<std::string> Shape::not_computed() const {
  std::vector<std::string> out;
  auto value = [](const auto& v) { return json(v).dump(); };
  if (!known_topk_method(topk_method))
    out.push_back(key_of("topk_method") + " = " + value(topk_method) +
                  ": a selection other than greedy, group_limited_greedy or noaux_tc");
  else if (topk_method != "greedy" && n_group > kMaxGroups)
    out.push_back(key_of("n_group") + " = " + value(n_group) + ": the route kernel ranks at most " +
                  std::to_string(kMaxGroups) + " groups");
  if (shared_expert_inter != 0 && shared_expert_inter % moe_inter != 0)
    out.push_back(key_of("shared_expert_inter") + " = " + value(shared_expert_inter) +
                  ": a shared expert whose width is not a whole multiple of " + key_of("moe_inter") +
                  " = " + value(moe_inter) +
                  " (the engine computes a wide shared MLP as that many experts of the routed width)");
  if (weight_scales_input && top_k != 1)
    out.push_back(key_of("weight_scales_input") + " with " + key_of("top_k") + " = " + value(top_k) +
                  ": the router weight scales the expert's input only at top-1");
  out.insert(out.end(), other_not_computed.begin(), other_not_computed.end());
  return out;
}

void refuse_not_computed(const Shape& s) {
  const std::vector<std::string> missing = s.not_computed();
  if (missing.empty()) return;
  std::string list;
  for (const std::string& m : missing) list += (list.empty() ? "" : "; ") + m;
  throw UsageError("shape '" + s.name + "' (" + (s.source.empty() ? "built in" : s.source) +
                   ") needs what the engine does not compute yet: " + list +
                   ". Running it without would measure another layer; not run");
}

void validate_shape(const Shape& s, const std::string& origin) {
  auto key = [&](const char* field) { return "\"" + s.key_of(field) + "\""; };
  auto positive = [&](int v, const char* field, int max) {
    if (v <= 0)
      throw UsageError(origin + ": field " + key(field) + " = " + std::to_string(v) +
                       " must be positive");
    if (v > max)
      throw UsageError(origin + ": field " + key(field) + " = " + std::to_string(v) +
                       " is above the limit " + std::to_string(max));
  };
  positive(s.hidden, "hidden", kMaxHidden);
  positive(s.moe_inter, "moe_inter", kMaxInter);
  positive(s.experts, "experts", kMaxExperts);
  positive(s.top_k, "top_k", kMaxTopK);
  if (s.shared_experts < 0 || s.shared_experts > 64)
    throw UsageError(origin + ": field " + key("shared_experts") + " = " +
                     std::to_string(s.shared_experts) + " must be in 0..64");
  if (s.top_k > s.experts)
    throw UsageError(origin + ": field " + key("top_k") + " = " + std::to_string(s.top_k) +
                     " exceeds " + key("experts") + " = " + std::to_string(s.experts));
  std::vector<std::pair<int, const char*>> sizes{{s.hidden, "hidden"}, {s.moe_inter, "moe_inter"}};
  if (s.shared_expert_inter != 0) {
    positive(s.shared_expert_inter, "shared_expert_inter", kMaxInter);
    sizes.emplace_back(s.shared_expert_inter, "shared_expert_inter");
  }
  for (auto [v, field] : sizes)
    if (v % kSizeMultiple != 0)
      throw UsageError(origin + ": field " + key(field) + " = " + std::to_string(v) +
                       " must be a multiple of " + std::to_string(kSizeMultiple) +
                       " (the kernels load 16 bytes of int4 weights, 32 values, at a time)");
  if (s.n_group < 1 || s.n_group > s.experts || s.experts % s.n_group != 0)
    throw UsageError(origin + ": field " + key("n_group") + " = " + std::to_string(s.n_group) +
                     " must divide " + key("experts") + " = " + std::to_string(s.experts));
  if (s.topk_group < 1 || s.topk_group > s.n_group)
    throw UsageError(origin + ": field " + key("topk_group") + " = " +
                     std::to_string(s.topk_group) + " must be 1.." + key("n_group") + " = " +
                     std::to_string(s.n_group));
  if (!std::isfinite(s.routed_scaling_factor) || s.routed_scaling_factor <= 0)
    throw UsageError(origin + ": field " + key("routed_scaling_factor") + " = " +
                     json(s.routed_scaling_factor).dump() + " must be a positive number");
  if (s.topk_method != "greedy" && s.topk_group * (s.experts / s.n_group) < s.top_k)
    throw UsageError(origin + ": field " + key("topk_group") + " = " + std::to_string(s.topk_group) +
                     " keeps " + std::to_string(s.topk_group * (s.experts / s.n_group)) +
                     " experts, fewer than " + key("top_k") + " = " + std::to_string(s.top_k));
  if (s.shared_expert_gate && s.shared_experts == 0)
    throw UsageError(origin + ": field " + key("shared_expert_gate") + " needs a shared expert");
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
  s.n_group = int_field(j, "n_group", origin, false, 1);
  s.topk_group = int_field(j, "topk_group", origin, false, 1);
  s.shared_expert_inter = int_field(j, "shared_expert_inter", origin, false, 0);
  if (j.contains("topk_method")) s.topk_method = string_value(j.at("topk_method"), origin, "topk_method");
  if (j.contains("routed_scaling_factor"))
    s.routed_scaling_factor = number_value(j.at("routed_scaling_factor"), origin, "routed_scaling_factor");
  for (auto [field, out] : {std::pair{"shared_expert_gate", &s.shared_expert_gate},
                            std::pair{"weight_scales_input", &s.weight_scales_input}})
    if (j.contains(field)) *out = bool_value(j.at(field), origin, field);
  if (j.contains("not_computed")) {
    const json& v = j.at("not_computed");
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); }))
      throw UsageError(origin + ": field \"not_computed\" must be an array of strings");
    s.other_not_computed = v.get<std::vector<std::string>>();
  }
  if (j.contains("routing_assumed")) {
    s.routing_family = string_value(j.at("routing_assumed"), origin, "routing_assumed");
    s.routing_assumed = true;
  }
  s.source = origin;
  validate_shape(s, origin);
  return s;
}

// A config's name: its "_name_or_path" (the last part of the path), else the file's own name,
// else its folder's for a file called config.json (a download keeps the model in the folder).
// Never "model_type": Qwen3-30B-A3B and Qwen3-235B-A22B are both "qwen3_moe".
std::string config_name(const json& j, const std::string& origin) {
  if (j.contains("_name_or_path") && j.at("_name_or_path").is_string()) {
    std::string path = j.at("_name_or_path").get<std::string>();
    while (!path.empty() && path.back() == '/') path.pop_back();
    const std::string last = std::filesystem::path(path).filename().string();
    if (!last.empty()) return last;
  }
  const std::filesystem::path file(origin);
  std::string name = file.stem().string();
  if (name == "config") name = file.parent_path().filename().string();
  return name.empty() ? "config" : name;
}

Shape shape_from_hf_config(const json& j, const std::string& origin,
                           const std::string& assume_routing) {
  if (!j.is_object()) throw UsageError(origin + ": a config must be a JSON object");
  const auto scopes = hf_scopes(j);
  const std::vector<std::string> expert_names{"n_routed_experts", "num_experts",
                                              "num_local_experts", "moe_num_experts",
                                              "n_experts", "num_routed_experts"};
  const std::vector<std::string> topk_names{"num_experts_per_tok", "experts_per_token",
                                            "moe_top_k", "num_selected_experts", "top_k",
                                            "moe_k", "router_topk", "moe_topk"};
  const std::vector<std::string> hidden_names{"hidden_size", "d_model", "n_embd", "dim"};
  const std::vector<std::string> inter_names{"moe_intermediate_size", "expert_intermediate_size",
                                             "ffn_hidden_size", "intermediate_size"};

  const Found experts = find_field(scopes, expert_names);
  if (!experts.value)
    throw UsageError(origin + ": not a Mixture-of-Experts config: no expert count in any of " +
                     join(expert_names) +
                     " (looked at the top level and in text_config, language_config, "
                     "llm_config, ffn_config, moe_config)");
  if (!experts.value->is_number_integer() || experts.value->get<long long>() <= 0)
    throw UsageError(origin + ": field \"" + experts.field +
                     "\" must be a positive integer (the routed experts), got " +
                     experts.value->dump());
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
  // An optional key: absent is nullptr; present with the wrong type is refused by name.
  auto optional = [&](const char* key) { return find_field(scopes, {key}); };
  // The model family, from the innermost scope that says (Llama-4: text_config's llama4_text).
  std::string model_type;
  for (const json* scope : scopes)
    if (scope->contains("model_type") && scope->at("model_type").is_string())
      model_type = scope->at("model_type").get<std::string>();

  Shape s;
  std::vector<std::string> provenance;
  auto from = [&](const char* field, const std::string& key) {
    if (key != field) s.source_keys[field] = key;
    provenance.push_back(std::string(field) + "<-" + key);
  };
  s.experts = config_int(*experts.value, origin, experts.field);
  from("experts", experts.field);
  auto [top_k, topk_field] = need_int(topk_names, "top-k");
  s.top_k = top_k;
  from("top_k", topk_field);
  auto [hidden, hidden_field] = need_int(hidden_names, "hidden size");
  s.hidden = hidden;
  from("hidden", hidden_field);
  auto [inter, inter_field] = need_int(inter_names, "expert intermediate size");
  s.moe_inter = inter;
  from("moe_inter", inter_field);

  // The routing semantics come from the family's row, never from a key another family happens
  // to share: a config of an unknown family is refused unless the user names what to assume.
  const RoutingFamily* family = find_routing_family(model_type);
  const std::string type_text = model_type.empty() ? "(none)" : "\"" + model_type + "\"";
  if (family && !assume_routing.empty() && assume_routing != model_type)
    throw UsageError(origin + ": model_type " + type_text + " is in the routing table; "
                     "--assume-routing " + assume_routing + " would compute it as another family");
  if (!family) {
    if (assume_routing.empty())
      throw UsageError(origin + ": model_type " + type_text + " is not in the routing table "
                       "(known: " + known_model_types() + "); to read it as one of them, pass "
                       "--assume-routing MODEL_TYPE");
    family = &assumed_routing_family(assume_routing);
    s.routing_assumed = true;
  }
  // A routing key of the wrong type is refused by name even where this family does not read
  // it: a config that says "8" for n_group is broken whichever family reads it.
  for (const char* k : {"n_shared_experts", "num_shared_experts", "moe_num_shared_experts",
                        "n_group", "topk_group", "shared_expert_intermediate_size",
                        "shared_intermediate_size"})
    if (const Found f = optional(k); f.value && !f.value->is_number_integer())
      throw UsageError(origin + ": field \"" + f.field + "\" must be an integer, got " +
                       f.value->dump());
  if (const Found f = optional("norm_topk_prob"); f.value) (void)bool_value(*f.value, origin, f.field);
  if (const Found f = optional("routed_scaling_factor"); f.value)
    (void)number_value(*f.value, origin, f.field);
  if (const Found f = optional("topk_method"); f.value) (void)string_value(*f.value, origin, f.field);
  if (const Found f = optional("scoring_func"); f.value) (void)parse_scoring(*f.value, origin, f.field);
  s.routing_family = family->model_type;
  const std::string row = s.routing_assumed
                              ? "--assume-routing " + family->model_type
                              : "model_type \"" + family->model_type + "\" (routing table)";
  provenance.push_back(std::string(s.routing_assumed ? "routing<-assumed " : "routing<-") +
                       family->model_type);
  s.scoring = family->scoring;
  s.source_keys["scoring"] = row;

  switch (family->shared) {
    case SharedExperts::none:
      break;
    case SharedExperts::counted:
      if (const Found f = optional(family->shared_key.c_str()); f.value) {
        if (!f.value->is_number_integer())  // a boolean is not a count
          throw UsageError(origin + ": field \"" + f.field + "\" must be an integer, got " +
                           f.value->dump());
        s.shared_experts = config_int(*f.value, origin, f.field);
        from("shared_experts", f.field);
      }
      break;
    case SharedExperts::own_width:
      if (const Found q = optional(family->shared_key.c_str()); q.value) {
        if (!q.value->is_number_integer())
          throw UsageError(origin + ": field \"" + q.field + "\" must be an integer, got " +
                           q.value->dump());
        if (q.value->get<long long>() != 0) {  // 0: the family builds no shared MLP
          s.shared_experts = 1;
          s.shared_expert_inter = config_int(*q.value, origin, q.field);
          from("shared_expert_inter", q.field);
          s.source_keys["shared_experts"] = q.field;
        }
      }
      break;
    case SharedExperts::one_routed_width:
      s.shared_experts = 1;
      s.source_keys["shared_experts"] = row;
      provenance.push_back("shared_experts<-model_type");
      break;
  }
  // The gate is the family's code, never a key: Qwen2-MoE's has no switch to turn it off.
  if (family->shared_gate == SharedGate::sigmoid && s.shared_experts > 0) {
    s.shared_expert_gate = true;
    s.source_keys["shared_expert_gate"] = row;
  }
  if (family->weight_scales_input) {
    s.weight_scales_input = true;
    s.source_keys["weight_scales_input"] = row;
  }
  switch (family->renormalize) {
    case Renormalize::always:
      s.renormalize = true;
      s.source_keys["renormalize"] = row;
      break;
    case Renormalize::never:
      s.renormalize = false;
      s.source_keys["renormalize"] = row;
      break;
    case Renormalize::by_key:
      s.renormalize = false;  // the config classes' default
      s.source_keys["renormalize"] = row;
      if (const Found f = optional("norm_topk_prob"); f.value) {
        s.renormalize = bool_value(*f.value, origin, f.field);
        from("renormalize", f.field);
      }
      break;
  }
  if (family->selection != Selection::greedy) {
    if (const Found f = optional("n_group"); f.value) {
      if (!f.value->is_number_integer())
        throw UsageError(origin + ": field \"n_group\" must be an integer, got " + f.value->dump());
      s.n_group = config_int(*f.value, origin, f.field);
    }
    if (const Found f = optional("topk_group"); f.value) {
      if (!f.value->is_number_integer())
        throw UsageError(origin + ": field \"topk_group\" must be an integer, got " +
                         f.value->dump());
      s.topk_group = config_int(*f.value, origin, f.field);
    }
  }
  if (family->selection == Selection::noaux_tc) {
    s.topk_method = "noaux_tc";
    s.source_keys["topk_method"] = row;
  } else if (family->selection == Selection::by_key) {
    if (const Found f = optional("topk_method"); f.value)
      s.topk_method = string_value(*f.value, origin, f.field);
  }
  if (family->routed_scaling)
    if (const Found f = optional("routed_scaling_factor"); f.value)
      s.routed_scaling_factor = number_value(*f.value, origin, f.field);
  if (!family->not_computed.empty()) s.other_not_computed.push_back(family->not_computed);
  // Other keys that change what a layer computes.
  if (const Found f = optional("hidden_act"); f.value) {
    const std::string act = string_value(*f.value, origin, f.field);
    if (act != "silu" && act != "swiglu")
      s.other_not_computed.push_back("hidden_act = \"" + act + "\": the engine's experts are SwiGLU (silu)");
  }
  if (const Found f = optional("swiglu_limit"); f.value)
    s.other_not_computed.push_back("swiglu_limit = " + number_value_text(*f.value, origin, f.field) +
                                   ": a clamped SwiGLU (gpt-oss)");

  s.name = config_name(j, origin);
  s.description = "derived from " + origin + " (" + join(provenance) + ")" +
                  (s.routing_assumed ? "; routing assumed as " + s.routing_family + " (--assume-routing)"
                                     : "");
  s.source = origin;
  validate_shape(s, origin);
  return s;
}

Shape load_shape_file(const std::filesystem::path& file, const std::string& assume_routing) {
  const json j = read_json_file(file.string(), "shape file");
  // A moebench shape file has "moe_inter"; anything else is read as a model's config.json.
  if (j.is_object() && (j.contains("moe_inter") || (j.contains("top_k") && j.contains("experts"))))
    return parse_shape_json(j, file.string());
  return shape_from_hf_config(j, file.string(), assume_routing);
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

Shape resolve_shape(const std::string& spec, const std::vector<Shape>& library,
                    const std::string& assume_routing) {
  for (const Shape& s : library)
    if (s.name == spec) return s;
  const bool looks_like_path = spec.find('/') != std::string::npos ||
                               spec.ends_with(".json");
  if (looks_like_path) return load_shape_file(spec, assume_routing);
  std::string valid;
  for (const Shape& s : library) valid += (valid.empty() ? "" : ", ") + s.name;
  throw UsageError("unknown shape '" + spec + "'; valid: " + valid +
                   " (or a path to a shape file or a model's config.json)");
}

}  // namespace moe
