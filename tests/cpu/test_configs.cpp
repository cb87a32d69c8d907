// Real Hugging Face configs (fixtures/configs/*/config.json, the published files' MoE keys):
// each parsed to the model's numbers, computed as the model routes (DeepSeek-V3's grouped
// noaux_tc choice, Qwen2-MoE's gated shared expert, Llama-4's scaled input), or refused at
// `moebench run` naming the key the engine does not compute yet; type errors refused; messages name the config's own keys. And what a
// run would do, shown without a GPU: `run --dry-run` and `list shapes --shape FILE`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "engine/shape.hpp"
#include "support/cli_runner.hpp"

using moe::Shape;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kConfigs = fs::path(MOEBENCH_FIXTURES_DIR) / "configs";

std::string config(const std::string& model) { return (kConfigs / model / "config.json").string(); }

Shape load(const std::string& model) { return moe::load_shape_file(config(model)); }

std::string hf_error(const json& j) {
  try {
    moe::shape_from_hf_config(j, "cfg.json");
  } catch (const moe::UsageError& e) {
    return e.what();
  }
  return "";
}

json mixtral() { return json::parse(moe::test::read_text(config("Mixtral-8x7B-v0.1"))); }

}  // namespace

TEST_CASE("every real config parses to the model's numbers, named after its folder") {
  struct Want {
    const char* model;
    int hidden, inter, experts, top_k, shared;
    moe::kernels::Scoring scoring;
    bool renormalize;
    bool runs;
  };
  using moe::kernels::Scoring;
  const Want want[] = {
      {"DeepSeek-V3", 7168, 2048, 256, 8, 1, Scoring::sigmoid, true, true},
      {"Qwen3-30B-A3B", 2048, 768, 128, 8, 0, Scoring::softmax, true, true},
      {"Qwen3-235B-A22B", 4096, 1536, 128, 8, 0, Scoring::softmax, true, true},
      {"Mixtral-8x7B-v0.1", 4096, 14336, 8, 2, 0, Scoring::softmax, true, true},
      {"gpt-oss-20b", 2880, 2880, 32, 4, 0, Scoring::softmax, true, false},
      {"Qwen1.5-MoE-A2.7B", 2048, 1408, 60, 4, 1, Scoring::softmax, false, true},
      {"OLMoE-1B-7B-0924", 2048, 1024, 64, 8, 0, Scoring::softmax, false, true},
      {"Llama-4-Scout-17B-16E", 5120, 8192, 16, 1, 1, Scoring::sigmoid, false, true},
      {"Phi-3.5-MoE-instruct", 4096, 6400, 16, 2, 0, Scoring::softmax, true, false},
      {"granite-3.0-3b-a800m-instruct", 1536, 512, 40, 8, 0, Scoring::softmax, true, true},
  };
  std::set<std::string> fingerprints;
  for (const Want& w : want) {
    CAPTURE(w.model);
    const Shape s = load(w.model);
    CHECK(s.name == w.model);
    CHECK(s.hidden == w.hidden);
    CHECK(s.moe_inter == w.inter);
    CHECK(s.experts == w.experts);
    CHECK(s.top_k == w.top_k);
    CHECK(s.shared_experts == w.shared);
    CHECK(s.scoring == w.scoring);
    CHECK(s.renormalize == w.renormalize);
    CHECK(s.not_computed().empty() == w.runs);
    fingerprints.insert(s.fingerprint());
  }
  CHECK(fingerprints.size() == std::size(want));
  // The features kept, not dropped.
  const Shape v3 = load("DeepSeek-V3");
  CHECK(v3.n_group == 8);
  CHECK(v3.topk_group == 4);
  CHECK(v3.topk_method == "noaux_tc");
  CHECK(v3.routed_scaling_factor == doctest::Approx(2.5));
  const Shape qwen2 = load("Qwen1.5-MoE-A2.7B");
  CHECK(qwen2.shared_expert_inter == 5632);
  CHECK(qwen2.shared_expert_gate);
  CHECK(load("Llama-4-Scout-17B-16E").weight_scales_input);
  const json j = v3.to_json();
  CHECK(j.at("n_group") == 8);
  CHECK(j.at("topk_method") == "noaux_tc");
  CHECK_FALSE(load("Qwen3-30B-A3B").to_json().contains("n_group"));  // defaults left out
}

TEST_CASE("moebench run refuses what the engine does not compute yet, naming the key") {
  const auto dir = moe::test::scratch_dir("configs-run");
  const std::string out = (dir / "r.json").string();
  struct Refused {
    std::string file;
    std::vector<std::string> says;
  };
  // A Qwen2-MoE config whose shared width is no whole multiple of the routed one.
  json odd = json::parse(moe::test::read_text(config("Qwen1.5-MoE-A2.7B")));
  odd["shared_expert_intermediate_size"] = 5632 + 32;
  const std::string odd_file = (dir / "odd-shared.json").string();
  std::ofstream(odd_file) << odd.dump();
  // Llama-4's input scaling beyond top-1.
  json scout2 = json::parse(moe::test::read_text(config("Llama-4-Scout-17B-16E")));
  (scout2.contains("text_config") ? scout2["text_config"] : scout2)["num_experts_per_tok"] = 2;
  const std::string scout2_file = (dir / "scout-top2.json").string();
  std::ofstream(scout2_file) << scout2.dump();
  // A topk_method the engine does not know, in a family that reads the key (DeepseekV2Moe;
  // DeepseekV3MoE always chooses by noaux_tc, whatever topk_method says).
  json sinkhorn = json::parse(
      moe::test::read_text(fs::path(MOEBENCH_TEST_DATA_DIR) / "routing" / "deepseek_v2.json"));
  sinkhorn["topk_method"] = "sinkhorn";
  const std::string v2_file = (dir / "v2-sinkhorn.json").string();
  std::ofstream(v2_file) << sinkhorn.dump();
  const Refused refused[] = {
      {config("gpt-oss-20b"), {"swiglu_limit = 7.0"}},
      {config("Phi-3.5-MoE-instruct"), {"phimoe", "SparseMixer"}},
      {odd_file, {"shared_expert_intermediate_size = 5664", "not a whole multiple of moe_intermediate_size = 1408"}},
      {scout2_file, {"num_experts_per_tok = 2", "only at top-1"}},
      {v2_file, {"topk_method = \"sinkhorn\""}},
  };
  for (const Refused& r : refused) {
    CAPTURE(r.file);
    const auto res = moe::test::moebench("run", "bandwidth", "--shape", r.file, "-o", out);
    CHECK(res.exit_code == 2);
    CHECK(res.err.find("does not compute yet") != std::string::npos);
    for (const std::string& s : r.says) CHECK(res.err.find(s) != std::string::npos);
    CHECK(std::count(res.err.begin(), res.err.end(), '\n') == 1);
  }
  CHECK_FALSE(fs::exists(out));
  // The configs the engine now computes pass the refusal (a dry run: no GPU needed).
  for (const char* model : {"DeepSeek-V3", "Qwen1.5-MoE-A2.7B", "Llama-4-Scout-17B-16E"}) {
    CAPTURE(model);
    CHECK_NOTHROW(moe::refuse_not_computed(load(model)));
    const auto res = moe::test::moebench("run", "bandwidth", "--dry-run", "--shape", config(model));
    CHECK(res.exit_code == 0);
  }
  // A DeepSeek-V2-Lite-style config whose routing keys are at their plain values runs.
  const json v2{{"model_type", "deepseek_v2"}, {"hidden_size", 2048}, {"moe_intermediate_size", 1408}, {"n_routed_experts", 64},
                {"num_experts_per_tok", 6}, {"n_shared_experts", 2}, {"n_group", 1},
                {"topk_group", 1}, {"topk_method", "greedy"}, {"routed_scaling_factor", 1.0},
                {"norm_topk_prob", false}, {"scoring_func", "softmax"}};
  CHECK(moe::shape_from_hf_config(v2, "v2.json").not_computed().empty());
  CHECK(moe::shape_from_hf_config(v2, "v2.json").dims(moe::kernels::WeightFormat::bf16).plain_routing());
}

TEST_CASE("config type errors are refused, and messages name the config's own key") {
  json j = mixtral();
  j["norm_topk_prob"] = "true";
  CHECK(hf_error(j) == "cfg.json: field \"norm_topk_prob\" must be true or false, got \"true\"");
  j = mixtral();
  j["n_shared_experts"] = true;
  CHECK(hf_error(j) == "cfg.json: field \"n_shared_experts\" must be an integer, got true");
  j = mixtral();
  j["n_group"] = "8";
  CHECK(hf_error(j).find("field \"n_group\" must be an integer") != std::string::npos);
  j = mixtral();
  j["routed_scaling_factor"] = "2.5";
  CHECK(hf_error(j).find("field \"routed_scaling_factor\" must be a number") != std::string::npos);
  j = mixtral();
  j["num_local_experts"] = true;
  CHECK(hf_error(j).find("field \"num_local_experts\" must be a positive integer") !=
        std::string::npos);
  j = mixtral();
  j["intermediate_size"] = 14300;
  CHECK(hf_error(j).find("field \"intermediate_size\" = 14300 must be a multiple of 32") !=
        std::string::npos);
  CHECK(hf_error(j).find("moe_inter") == std::string::npos);
  j = mixtral();
  j["num_experts_per_tok"] = 9;
  CHECK(hf_error(j).find("\"num_experts_per_tok\" = 9 exceeds \"num_local_experts\" = 8") !=
        std::string::npos);
  j = mixtral();
  j["hidden_size"] = 0;
  CHECK(hf_error(j).find("\"hidden_size\" = 0 must be positive") != std::string::npos);
}

TEST_CASE("--m prefill lists the prefill sizes, beside numbers and the decode set") {
  const auto r = moe::test::moebench("run", "bandwidth", "--dry-run", "--shape", "tiny", "--m", "3,prefill",
                                     "--weight-format", "bf16", "--mode", "graph");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("6 cases; nothing ran") != std::string::npos);
  // The M column of the listed rows ("1  bandwidth  step  tiny  M  ...").
  std::vector<int> ms;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string index, probe, name, shape;
    int m = 0;
    if (row >> index >> probe >> name >> shape >> m && probe == "bandwidth") ms.push_back(m);
  }
  CHECK(ms == std::vector<int>{3, 128, 512, 2048, 8192, 16384});
  const auto decode = moe::test::moebench("run", "bandwidth", "--dry-run", "--shape", "tiny", "--m", "decode",
                                          "--weight-format", "bf16", "--mode", "graph");
  CHECK(decode.out.find("7 cases; nothing ran") != std::string::npos);
  const auto bad = moe::test::moebench("run", "bandwidth", "--dry-run", "--m", "prefil");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--m 'prefil' is not valid") != std::string::npos);
  CHECK(bad.err.find("named set: decode (1..64), prefill (128..16384)") != std::string::npos);
}

TEST_CASE("moebench run --dry-run lists every case and touches no GPU") {
  const auto dir = moe::test::scratch_dir("dry-run");
  const std::string out = (dir / "r.json").string();
  const auto r = moe::test::moebench("run", "bandwidth", "--dry-run", "--shape", "tiny", "--m",
                                     "1,2", "--weight-format", "bf16", "-o", out,
                                     "--ceiling-gbps", "1000");
  CHECK(r.exit_code == 0);  // also on a machine without a GPU or driver
  CHECK(r.out.find("4 cases; nothing ran") != std::string::npos);
  CHECK(r.out.find("--ceiling-gbps 1000") != std::string::npos);
  for (const char* mode : {"eager", "graph"}) CHECK(r.out.find(mode) != std::string::npos);
  // The shape with every parsed field and its fingerprint.
  const Shape tiny = moe::load_shape_file(fs::path(MOEBENCH_FIXTURES_DIR) / "shapes" / "tiny.json");
  CHECK(r.out.find("\"hidden\":256") != std::string::npos);
  CHECK(r.out.find("fingerprint " + tiny.fingerprint()) != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  // tiny at M = 1: 32 layers of router (8 x 256 x 2 B) + activations (2 x 256 x 2 B) + 3
  // experts (2 routed, 1 shared) of 3 x 256 x 128 x 2 B = 32 x 594944 B = 19.04 MB, which take
  // 19.04 us at 1000 GB/s.
  CHECK(r.out.find("32      19.04    19.04") != std::string::npos);

  const auto all = moe::test::moebench("run", "--dry-run");
  CHECK(all.exit_code == 0);
  CHECK(all.out.find("deepseek-v2-lite") != std::string::npos);
  CHECK(all.out.find("copy") != std::string::npos);
  const auto refused =
      moe::test::moebench("run", "--dry-run", "--shape", config("gpt-oss-20b"));
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("swiglu_limit") != std::string::npos);
  const auto bad = moe::test::moebench("run", "--dry-run", "--ceiling-gbps", "0");
  CHECK(bad.exit_code == 2);
}

TEST_CASE("moebench list shapes --shape FILE shows the config as parsed") {
  const auto r = moe::test::moebench("list", "shapes", "--shape", config("DeepSeek-V3"));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("shape DeepSeek-V3") != std::string::npos);
  const auto row = r.out.find("\nmoe_inter ");
  REQUIRE(row != std::string::npos);
  const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
  CHECK(line.find(" 2048 ") != std::string::npos);
  CHECK(line.find("moe_intermediate_size") != std::string::npos);  // where it came from
  CHECK(r.out.find("runs as parsed") != std::string::npos);  // its grouped choice is computed
  CHECK(r.out.find("noaux_tc") != std::string::npos);
  CHECK(r.out.find("fingerprint") != std::string::npos);
  const auto qwen = moe::test::moebench("list", "shapes", "--shape", config("Qwen1.5-MoE-A2.7B"));
  CHECK(qwen.out.find("computed as 4 shared experts of width 1408 (shared_expert_intermediate_size = 5632)") !=
        std::string::npos);
  const auto oss = moe::test::moebench("list", "shapes", "--shape", config("gpt-oss-20b"));
  CHECK(oss.out.find("not computed yet (moebench run refuses it): swiglu_limit = 7.0") != std::string::npos);
  const auto plain = moe::test::moebench("list", "shapes", "--shape", config("Qwen3-30B-A3B"));
  CHECK(plain.out.find("runs as parsed") != std::string::npos);
  const auto wrong = moe::test::moebench("list", "probes", "--shape", "tiny");
  CHECK(wrong.exit_code == 2);
}
