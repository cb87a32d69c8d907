// The routing table by model family (engine/routing_family.hpp): each row's config
// (tests/data/routing/MODEL_TYPE.json, real-looking configs of the family) parsed to the
// family's routing; an unknown model_type refused naming the key and the known ones, unless
// --assume-routing names a family, which the shape, `list shapes` and the report record; the
// shared-expert gate and the renormalisation default taken from the row, not from one string.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/errors.hpp"
#include "engine/routing_family.hpp"
#include "engine/shape.hpp"
#include "support/cli_runner.hpp"

using moe::Shape;
using moe::kernels::Scoring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kRouting = fs::path(MOEBENCH_TEST_DATA_DIR) / "routing";

std::string data_file(const std::string& model_type) {
  return (kRouting / (model_type + ".json")).string();
}

json data(const std::string& model_type) {
  return json::parse(moe::test::read_text(data_file(model_type)));
}

std::string hf_error(const json& j, const std::string& assume = "") {
  try {
    moe::shape_from_hf_config(j, "cfg.json", assume);
  } catch (const moe::UsageError& e) {
    return e.what();
  }
  return "";
}

// What each family's config must parse to: the routing its modelling file computes.
struct Want {
  const char* model_type;
  Scoring scoring;
  const char* topk_method;
  bool renormalize;
  int shared_experts;
  int shared_expert_inter;
  bool shared_expert_gate;
  double routed_scaling_factor;
  bool weight_scales_input;
  bool refused;  // the engine does not compute the family: not_computed names it
};

const Want kWants[] = {
    {"mixtral", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, false},
    {"minimax", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, false},
    {"jamba", Scoring::softmax, "greedy", false, 0, 0, false, 1.0, false, false},
    {"qwen2_moe", Scoring::softmax, "greedy", false, 1, 20480, true, 1.0, false, false},
    {"qwen3_moe", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, false},
    {"qwen3_next", Scoring::softmax, "greedy", true, 1, 512, true, 1.0, false, false},
    {"olmoe", Scoring::softmax, "greedy", false, 0, 0, false, 1.0, false, false},
    {"deepseek_v2", Scoring::softmax, "group_limited_greedy", false, 2, 0, false, 16.0, false, false},
    {"deepseek_v3", Scoring::sigmoid, "noaux_tc", true, 1, 0, false, 2.5, false, false},
    {"dots1", Scoring::sigmoid, "noaux_tc", true, 2, 0, false, 2.5, false, false},
    {"glm4_moe", Scoring::sigmoid, "noaux_tc", true, 1, 0, false, 1.0, false, false},
    {"ernie4_5_moe", Scoring::softmax, "noaux_tc", true, 2, 0, false, 1.0, false, false},
    {"llama4_text", Scoring::sigmoid, "greedy", false, 1, 0, false, 1.0, true, false},
    {"llama4", Scoring::sigmoid, "greedy", false, 1, 0, false, 1.0, true, false},
    {"granitemoe", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, false},
    {"granitemoeshared", Scoring::softmax, "greedy", true, 1, 1024, false, 1.0, false, false},
    {"gpt_oss", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, true},
    {"phimoe", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, true},
    {"hunyuan_v1_moe", Scoring::softmax, "greedy", true, 0, 0, false, 1.0, false, true},
};

const Want* want_of(const std::string& model_type) {
  for (const Want& w : kWants)
    if (model_type == w.model_type) return &w;
  return nullptr;
}

}  // namespace

TEST_CASE("every row of the routing table has a config here and names its modelling file") {
  std::set<std::string> seen;
  for (const moe::RoutingFamily& f : moe::routing_families()) {
    CAPTURE(f.model_type);
    CHECK(seen.insert(f.model_type).second);  // one row a model_type
    CHECK(want_of(f.model_type) != nullptr);   // a new row comes with its expectations
    CHECK(fs::exists(data_file(f.model_type)));
    CHECK(f.source.starts_with("src/transformers/models/"));
    CHECK(f.source.ends_with(".py"));
    CHECK(f.source.find("/" + f.model_type.substr(0, 5)) != std::string::npos);
  }
  for (const Want& w : kWants) CHECK(moe::find_routing_family(w.model_type) != nullptr);
}

TEST_CASE("each family's config parses to the routing its modelling file computes") {
  for (const Want& w : kWants) {
    CAPTURE(w.model_type);
    const Shape s = moe::load_shape_file(data_file(w.model_type));
    CHECK(s.routing_family == w.model_type);
    CHECK_FALSE(s.routing_assumed);
    CHECK(s.scoring == w.scoring);
    CHECK(s.topk_method == w.topk_method);
    CHECK(s.renormalize == w.renormalize);
    CHECK(s.shared_experts == w.shared_experts);
    CHECK(s.shared_expert_inter == w.shared_expert_inter);
    CHECK(s.shared_expert_gate == w.shared_expert_gate);
    CHECK(s.routed_scaling_factor == doctest::Approx(w.routed_scaling_factor));
    CHECK(s.weight_scales_input == w.weight_scales_input);
    CHECK(s.not_computed().empty() == !w.refused);
    CHECK_FALSE(s.to_json().contains("routing_assumed"));
    if (w.refused) {
      CHECK_THROWS_WITH_AS(moe::refuse_not_computed(s),
                           doctest::Contains(("model_type \"" + std::string(w.model_type) + "\"").c_str()),
                           moe::UsageError);
    }
  }
}

TEST_CASE("the shared-expert gate comes from the family's row, not from one model_type string") {
  // Qwen3-Next gates its shared expert with a sigmoid (Qwen3NextSparseMoeBlock is
  // Qwen2MoeSparseMoeBlock) under its own model_type.
  const Shape next = moe::load_shape_file(data_file("qwen3_next"));
  CHECK(next.shared_expert_gate);
  CHECK(next.key_of("shared_expert_gate").find("qwen3_next") != std::string::npos);
  CHECK(next.dims(moe::kernels::WeightFormat::bf16).shared_gate);
  // Granite's shared MLP has a width key too, and no gate.
  const Shape granite = moe::load_shape_file(data_file("granitemoeshared"));
  CHECK(granite.shared_experts == 1);
  CHECK_FALSE(granite.shared_expert_gate);
  // A width of 0 builds no shared MLP, so nothing to gate.
  json none = data("qwen2_moe");
  none["shared_expert_intermediate_size"] = 0;
  const Shape q = moe::shape_from_hf_config(none, "cfg.json");
  CHECK(q.shared_experts == 0);
  CHECK_FALSE(q.shared_expert_gate);
}

TEST_CASE("a key one family reads means nothing to another") {
  // norm_topk_prob absent: Qwen2-MoE's config class says false, Mixtral always divides.
  json qwen = data("qwen2_moe");
  qwen.erase("norm_topk_prob");
  CHECK_FALSE(moe::shape_from_hf_config(qwen, "cfg.json").renormalize);
  json mixtral = data("mixtral");
  mixtral["norm_topk_prob"] = false;
  CHECK(moe::shape_from_hf_config(mixtral, "cfg.json").renormalize);
  // DeepseekV2Moe never divides, whatever norm_topk_prob says.
  json v2 = data("deepseek_v2");
  v2["norm_topk_prob"] = true;
  CHECK_FALSE(moe::shape_from_hf_config(v2, "cfg.json").renormalize);
  // DeepseekV3MoE always chooses by noaux_tc, with sigmoid scores.
  json v3 = data("deepseek_v3");
  v3["topk_method"] = "greedy";
  v3["scoring_func"] = "softmax";
  const Shape s = moe::shape_from_hf_config(v3, "cfg.json");
  CHECK(s.topk_method == "noaux_tc");
  CHECK(s.scoring == Scoring::sigmoid);
  // A shared-expert count key of another family is not a shared expert of this one.
  mixtral["n_shared_experts"] = 2;
  CHECK(moe::shape_from_hf_config(mixtral, "cfg.json").shared_experts == 0);
}

TEST_CASE("a config whose model_type is not in the table is refused, naming the key and the known ones") {
  json dbrx = data("mixtral");
  dbrx["model_type"] = "dbrx";
  const std::string e = hf_error(dbrx);
  CHECK(e.find("cfg.json") == 0);
  CHECK(e.find("model_type \"dbrx\" is not in the routing table") != std::string::npos);
  for (const moe::RoutingFamily& f : moe::routing_families())
    CHECK(e.find(f.model_type) != std::string::npos);
  CHECK(e.find("--assume-routing") != std::string::npos);
  json untyped = data("mixtral");
  untyped.erase("model_type");
  CHECK(hf_error(untyped).find("model_type (none) is not in the routing table") != std::string::npos);
}

TEST_CASE("--assume-routing reads an unknown model_type as a known family and records it") {
  json cfg = data("qwen2_moe");
  cfg["model_type"] = "qwen2_moe_custom";
  const Shape s = moe::shape_from_hf_config(cfg, "cfg.json", "qwen2_moe");
  CHECK(s.routing_assumed);
  CHECK(s.routing_family == "qwen2_moe");
  CHECK(s.shared_expert_gate);
  CHECK(s.to_json().at("routing_assumed") == "qwen2_moe");
  CHECK(s.description.find("routing assumed as qwen2_moe") != std::string::npos);
  CHECK(s.key_of("shared_expert_gate") == "--assume-routing qwen2_moe");
  // The record survives a shape file written from it (a case file's shape).
  const Shape back = moe::parse_shape_json(s.to_json(), "shape.json");
  CHECK(back.routing_assumed);
  CHECK(back.routing_family == "qwen2_moe");
  // An unknown family is refused with the valid ones; a known model_type is never reread.
  const std::string bad = hf_error(cfg, "qwen9");
  CHECK(bad.find("--assume-routing 'qwen9' is not a model_type of the routing table; valid: mixtral") == 0);
  const std::string other = hf_error(data("mixtral"), "qwen2_moe");
  CHECK(other.find("model_type \"mixtral\" is in the routing table") != std::string::npos);
  CHECK(moe::shape_from_hf_config(data("mixtral"), "cfg.json", "mixtral").routing_assumed == false);
}

TEST_CASE("moebench: the refusal, --assume-routing in list and run, and the report's record") {
  const auto dir = moe::test::scratch_dir("assume-routing");
  const std::string path = (dir / "config.json").string();
  json cfg = data("qwen2_moe");
  cfg["model_type"] = "qwen2_moe_custom";
  std::ofstream(path) << cfg.dump();

  const auto refused = moe::test::moebench("list", "shapes", "--shape", path);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("model_type \"qwen2_moe_custom\" is not in the routing table") != std::string::npos);

  const auto listed = moe::test::moebench("list", "shapes", "--shape", path, "--assume-routing", "qwen2_moe");
  CHECK(listed.exit_code == 0);
  CHECK(listed.out.find("routing ASSUMED as qwen2_moe") != std::string::npos);
  CHECK(listed.out.find("routing_assumed") != std::string::npos);

  const auto dry = moe::test::moebench("run", "bandwidth", "--dry-run", "--shape", path);
  CHECK(dry.exit_code == 2);
  const auto assumed = moe::test::moebench("run", "bandwidth", "--dry-run", "--shape", path,
                                           "--assume-routing", "qwen2_moe");
  CHECK(assumed.exit_code == 0);
  // The dry run prints each shape as the report's options.shapes will hold it.
  CHECK(assumed.out.find("\"routing_assumed\":\"qwen2_moe\"") != std::string::npos);

  const auto help = moe::test::moebench("run", "--help");
  CHECK(help.out.find("--assume-routing") != std::string::npos);
  fs::remove_all(dir);
}
