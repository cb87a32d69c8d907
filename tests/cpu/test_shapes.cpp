#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include "common/errors.hpp"
#include "engine/shape.hpp"

using moe::Shape;
using moe::UsageError;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kShapes = fs::path(MOEBENCH_FIXTURES_DIR) / "shapes";

json valid_shape() {
  return {{"name", "t"}, {"hidden", 256}, {"moe_inter", 128}, {"experts", 8}, {"top_k", 2}};
}

std::string error_of(const json& j) {
  try {
    moe::parse_shape_json(j, "shape.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string hf_error_of(const json& j) {
  try {
    moe::shape_from_hf_config(j, "config.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the shape library holds the model shapes with the configs' numbers") {
  const auto lib = moe::load_shape_library(kShapes);
  auto get = [&](const std::string& n) { return moe::resolve_shape(n, lib); };
  const Shape ds = get("deepseek-v2-lite");
  CHECK(ds.hidden == 2048);
  CHECK(ds.moe_inter == 1408);
  CHECK(ds.experts == 64);
  CHECK(ds.top_k == 6);
  CHECK(ds.shared_experts == 2);
  CHECK(get("qwen3-30b-a3b").experts == 128);
  CHECK(get("mixtral-8x7b").moe_inter == 14336);
  CHECK(get("gpt-oss-20b").hidden == 2880);
  CHECK(get("glm-4.5-air").shared_experts == 1);
  CHECK(get("deepseek-v3").experts == 256);
  CHECK(get("deepseek-v3").scoring == moe::kernels::Scoring::sigmoid);
  CHECK(get("tiny").hidden == 256);
}

TEST_CASE("an unknown shape name lists the valid ones") {
  const auto lib = moe::load_shape_library(kShapes);
  CHECK_THROWS_WITH_AS(moe::resolve_shape("llama-moe", lib),
                       doctest::Contains("deepseek-v2-lite"), UsageError);
}

TEST_CASE("shape validation names the file, the field and the rule") {
  CHECK(error_of(valid_shape()).empty());
  json j = valid_shape();
  j["hidden"] = 0;
  CHECK(error_of(j).find("shape.json: field \"hidden\" = 0 must be positive") != std::string::npos);
  j = valid_shape();
  j["top_k"] = 9;
  CHECK(error_of(j).find("\"top_k\" = 9 exceeds \"experts\" = 8") != std::string::npos);
  j = valid_shape();
  j["colour"] = "red";
  CHECK(error_of(j).find("unknown field \"colour\"") != std::string::npos);
  j = valid_shape();
  j["experts"] = "64";
  CHECK(error_of(j).find("\"experts\" must be an integer") != std::string::npos);
  j = valid_shape();
  j.erase("moe_inter");
  CHECK(error_of(j).find("\"moe_inter\" is missing") != std::string::npos);
  j = valid_shape();
  j["hidden"] = 100;
  CHECK(error_of(j).find("multiple of 32") != std::string::npos);
  j = valid_shape();
  j["scoring"] = "relu";
  CHECK(error_of(j).find("valid: softmax, sigmoid") != std::string::npos);
  j = valid_shape();
  j["experts"] = -4;
  CHECK(error_of(j).find("must be positive") != std::string::npos);
  CHECK(error_of(json::array()).find("JSON object") != std::string::npos);
}

TEST_CASE("malformed shape files are refused with the file named") {
  const std::string path = "/tmp/moebench-shape-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{\"name\": \"t\", \"hidden\": ";
  CHECK_THROWS_WITH_AS(moe::load_shape_file(path), doctest::Contains(path.c_str()), UsageError);
  fs::remove(path);
}

TEST_CASE("Hugging Face configs: each family's naming gives the same kind of shape") {
  SUBCASE("DeepSeek-V2-Lite") {
    const json cfg{{"model_type", "deepseek_v2"}, {"hidden_size", 2048},
                   {"intermediate_size", 10944}, {"moe_intermediate_size", 1408},
                   {"n_routed_experts", 64}, {"num_experts_per_tok", 6},
                   {"n_shared_experts", 2}, {"norm_topk_prob", false},
                   {"scoring_func", "softmax"}};
    const Shape s = moe::shape_from_hf_config(cfg, "config.json");
    CHECK(s.moe_inter == 1408);  // not the dense intermediate_size
    CHECK(s.experts == 64);
    CHECK(s.top_k == 6);
    CHECK(s.shared_experts == 2);
    CHECK_FALSE(s.renormalize);
    // Named after the file (its folder, for a config.json), never model_type.
    CHECK(s.name == "config");
    CHECK(moe::shape_from_hf_config(cfg, "/models/DeepSeek-V2-Lite/config.json").name ==
          "DeepSeek-V2-Lite");
    CHECK(moe::shape_from_hf_config(cfg, "deepseek-v2-lite.json").name == "deepseek-v2-lite");
  }
  SUBCASE("Mixtral: num_local_experts and the plain intermediate_size") {
    const json cfg{{"model_type", "mixtral"}, {"_name_or_path", "mistralai/Mixtral-8x7B-v0.1"}, {"hidden_size", 4096},
                   {"intermediate_size", 14336}, {"num_local_experts", 8},
                   {"num_experts_per_tok", 2}};
    const Shape s = moe::shape_from_hf_config(cfg, "config.json");
    CHECK(s.name == "Mixtral-8x7B-v0.1");
    CHECK(s.moe_inter == 14336);
    CHECK(s.experts == 8);
    CHECK(s.shared_experts == 0);
  }
  SUBCASE("gpt-oss: experts_per_token") {
    const json cfg{{"model_type", "gpt_oss"}, {"hidden_size", 2880}, {"intermediate_size", 2880},
                   {"num_local_experts", 32}, {"experts_per_token", 4}};
    const Shape s = moe::shape_from_hf_config(cfg, "gpt-oss/config.json");
    CHECK(s.top_k == 4);
    CHECK(s.name == "gpt-oss");
  }
  SUBCASE("Qwen2-MoE: one shared expert of its own width, kept as that width") {
    const json cfg{{"model_type", "qwen2_moe"}, {"hidden_size", 2048}, {"moe_intermediate_size", 1408}, {"num_experts", 60},
                   {"num_experts_per_tok", 4}, {"shared_expert_intermediate_size", 5000 + 24}};
    const Shape s = moe::shape_from_hf_config(cfg, "config.json");
    CHECK(s.shared_experts == 1);
    CHECK(s.shared_expert_inter == 5024);  // not rounded up to 4 x 1408 (+12% bytes)
    REQUIRE(s.not_computed().size() == 1);
    CHECK(s.not_computed()[0].find("shared_expert_intermediate_size = 5024") == 0);
  }
  SUBCASE("DBRX: fields nested in ffn_config") {
    const json cfg{{"d_model", 6144},
                   {"ffn_config", {{"moe_num_experts", 16}, {"moe_top_k", 4},
                                   {"ffn_hidden_size", 10752}}}};
    // dbrx is not in the routing table: read with an assumed family, and recorded so.
    const Shape s = moe::shape_from_hf_config(cfg, "config.json", "mixtral");
    CHECK(s.routing_assumed);
    CHECK(s.experts == 16);
    CHECK(s.top_k == 4);
    CHECK(s.moe_inter == 10752);
  }
  SUBCASE("a multimodal wrapper: fields in text_config") {
    const json cfg{{"text_config", {{"model_type", "qwen3_moe"}, {"hidden_size", 2048}, {"moe_intermediate_size", 768},
                                    {"num_experts", 128}, {"num_experts_per_tok", 8}}}};
    CHECK(moe::shape_from_hf_config(cfg, "config.json").experts == 128);
  }
}

TEST_CASE("a dense config is refused, naming the fields looked for") {
  const json llama{{"hidden_size", 4096}, {"intermediate_size", 11008}};
  const std::string e = hf_error_of(llama);
  CHECK(e.find("not a Mixture-of-Experts config") != std::string::npos);
  CHECK(e.find("n_routed_experts") != std::string::npos);
  CHECK(e.find("num_local_experts") != std::string::npos);
  const json no_topk{{"hidden_size", 4096}, {"intermediate_size", 14336},
                     {"num_local_experts", 8}};
  CHECK(hf_error_of(no_topk).find("num_experts_per_tok") != std::string::npos);
}

TEST_CASE("--shape accepts a path to a model's config.json") {
  const auto lib = moe::load_shape_library(kShapes);
  const fs::path dir = fs::temp_directory_path() / ("moebench-cfg-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << json{{"model_type", "qwen3_moe"}, {"hidden_size", 2048},
                                             {"moe_intermediate_size", 768},
                                             {"num_experts", 128},
                                             {"num_experts_per_tok", 8}}
                                            .dump();
  const Shape s = moe::resolve_shape((dir / "config.json").string(), lib);
  CHECK(s.experts == 128);
  CHECK(s.description.find("experts<-num_experts") != std::string::npos);
  fs::remove_all(dir);
}
