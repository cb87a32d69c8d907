// A case key that cannot collide: the shape's name plus a fingerprint of every dimension and
// routing parameter; older reports (no fingerprint) still compare, by name, with a warning.
// Shapes named after the config's path or file; duplicate values and shape names refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/errors.hpp"
#include "engine/shape.hpp"
#include "reports/compare.hpp"
#include "reports/noise.hpp"
#include "support/cli_runner.hpp"

using namespace moe::report;
using moe::Shape;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

Shape base_shape() {
  return moe::parse_shape_json({{"name", "s"}, {"hidden", 2048}, {"moe_inter", 768},
                                {"experts", 128}, {"top_k", 8}, {"shared_experts", 0}},
                               "s.json");
}

std::string report(const std::string& name) {
  return moe::test::data_file("reports/" + name);
}

// h200-base.json's shape cases, each given the fingerprint `fp`.
Report with_fingerprint(const std::string& fp) {
  Report r = load_report(report("h200-base.json"));
  for (CaseResult& c : r.cases)
    if (c.shape) c.shape_fingerprint = fp;
  return r;
}

bool warned(const std::vector<std::string>& warnings, const std::string& part) {
  for (const std::string& w : warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the fingerprint changes with every dimension and routing parameter, not the name") {
  const Shape s = base_shape();
  const std::string fp = s.fingerprint();
  CHECK(fp.size() == 16);
  std::set<std::string> seen{fp};
  auto changed = [&](auto edit) {
    Shape t = s;
    edit(t);
    return t.fingerprint();
  };
  const std::string variants[] = {
      changed([](Shape& t) { t.hidden = 4096; }),
      changed([](Shape& t) { t.moe_inter = 1536; }),
      changed([](Shape& t) { t.experts = 64; }),
      changed([](Shape& t) { t.top_k = 4; }),
      changed([](Shape& t) { t.shared_experts = 1; }),
      changed([](Shape& t) { t.scoring = moe::kernels::Scoring::sigmoid; }),
      changed([](Shape& t) { t.renormalize = false; }),
      changed([](Shape& t) { t.n_group = 8; }),
      changed([](Shape& t) { t.topk_group = 4; }),
      changed([](Shape& t) { t.topk_method = "noaux_tc"; }),
      changed([](Shape& t) { t.routed_scaling_factor = 2.5; }),
      changed([](Shape& t) { t.shared_expert_inter = 5632; }),
      changed([](Shape& t) { t.shared_expert_gate = true; }),
      changed([](Shape& t) { t.weight_scales_input = true; }),
  };
  for (const std::string& v : variants) CHECK(seen.insert(v).second);
  // Name, description and source are not what ran.
  CHECK(changed([](Shape& t) {
          t.name = "other";
          t.description = "x";
          t.source = "y";
        }) == fp);
  // Defaults written out give the same fingerprint as defaults left out (older shape files).
  const Shape explicit_defaults = moe::parse_shape_json(
      {{"name", "s"}, {"hidden", 2048}, {"moe_inter", 768}, {"experts", 128}, {"top_k", 8},
       {"n_group", 1}, {"topk_group", 1}, {"topk_method", "greedy"},
       {"routed_scaling_factor", 1.0}, {"shared_expert_gate", false}},
      "d.json");
  CHECK(explicit_defaults.fingerprint() == fp);
  // A shape written to a report and read back keeps its fingerprint.
  CHECK(moe::parse_shape_json(s.to_json(), "back.json").fingerprint() == fp);
}

TEST_CASE("a case key carries the fingerprint; a report without it loads with none") {
  CaseResult c;
  c.probe = "bandwidth";
  c.name = "step";
  c.shape = "qwen3_moe";
  c.m = 1;
  c.shape_fingerprint = "0123456789abcdef";
  CHECK(c.key() == "bandwidth/step/shape=qwen3_moe/m=1/dims=0123456789abcdef");
  CHECK(c.key(false) == "bandwidth/step/shape=qwen3_moe/m=1");
  const json j = c;
  CHECK(j.at("shape_fingerprint") == "0123456789abcdef");
  CHECK(j.get<CaseResult>().key() == c.key());
  const Report old = load_report(report("h200-base.json"));
  for (const CaseResult& k : old.cases) CHECK_FALSE(k.shape_fingerprint.has_value());
}

TEST_CASE("compare: one shape name with two sets of dimensions never matches as one case") {
  // Two reports whose bandwidth shapes differ under the same names: before, SAME and exit 0.
  const Report base = with_fingerprint("00000000000000aa");
  const Report head = with_fingerprint("00000000000000bb");
  const Comparison c = compare_reports(base, head, {});
  CHECK(c.cases.size() == 3);          // the copy cases, which have no shape
  CHECK(c.only_in_base.size() == 24);  // MISSING: a failure
  CHECK(c.only_in_head.size() == 24);
  CHECK(c.regressed());
  CHECK_FALSE(warned(c.warnings, "without shape fingerprints"));
  // The same fingerprints match: SAME, no warning.
  const Comparison same = compare_reports(base, with_fingerprint("00000000000000aa"), {});
  CHECK(same.cases.size() == 27);
  CHECK_FALSE(warned(same.warnings, "without shape fingerprints"));
}

TEST_CASE("compare and noise: a report without fingerprints matches by name, with a warning") {
  const Report old = load_report(report("h200-same-build.json"));
  const Report fresh = with_fingerprint("00000000000000aa");
  const Comparison c = compare_reports(old, fresh, {});
  CHECK(c.cases.size() == 27);
  CHECK(c.only_in_base.empty());
  CHECK(warned(c.warnings, "base has cases without shape fingerprints"));
  CHECK_FALSE(c.regressed());
  const NoiseSummary n = run_to_run_noise({old, fresh}, {"old.json", "new.json"}, {});
  CHECK(n.cases.size() == 27);
  CHECK(warned(n.warnings, "without shape fingerprints"));
}

TEST_CASE("a config is named after _name_or_path, else its file, never its model_type") {
  const json qwen3{{"model_type", "qwen3_moe"}, {"hidden_size", 2048},
                   {"moe_intermediate_size", 768}, {"num_experts", 128},
                   {"num_experts_per_tok", 8}};
  json big = qwen3;
  big["hidden_size"] = 4096;
  big["moe_intermediate_size"] = 1536;
  CHECK(moe::shape_from_hf_config(qwen3, "/m/Qwen3-30B-A3B/config.json").name == "Qwen3-30B-A3B");
  CHECK(moe::shape_from_hf_config(big, "/m/Qwen3-235B-A22B/config.json").name ==
        "Qwen3-235B-A22B");
  CHECK(moe::shape_from_hf_config(qwen3, "/m/qwen3-small.json").name == "qwen3-small");
  json named = qwen3;
  named["_name_or_path"] = "Qwen/Qwen3-30B-A3B/";
  CHECK(moe::shape_from_hf_config(named, "/m/config.json").name == "Qwen3-30B-A3B");
}

TEST_CASE("moebench run: two shapes with one name, and a value given twice, are refused") {
  const auto dir = moe::test::scratch_dir("case-keys");
  for (const char* model : {"a", "b"}) {
    fs::create_directories(dir / model);
    std::ofstream(dir / model / "config.json")
        << json{{"model_type", "qwen3_moe"}, {"_name_or_path", "org/same-name"}, {"hidden_size", 2048},
                {"moe_intermediate_size", 768}, {"num_experts", 128},
                {"num_experts_per_tok", model[0] == 'a' ? 8 : 4}}
               .dump();
  }
  const std::string out = (dir / "r.json").string();
  const auto clash = moe::test::moebench("run", "bandwidth", "--shape",
                                         (dir / "a" / "config.json").string() + "," +
                                             (dir / "b" / "config.json").string(),
                                         "-o", out);
  CHECK(clash.exit_code == 2);
  CHECK(clash.err.find("two shapes are named 'same-name'") != std::string::npos);
  struct Twice {
    std::vector<std::string> args;
    std::string says;
  };
  const Twice cases[] = {
      {{"run", "bandwidth", "--m", "1,2,2"}, "--m '2' is given twice"},
      {{"run", "bandwidth", "--m", "4", "--m", "4"}, "--m '4' is given twice"},
      {{"run", "bandwidth", "--shape", "tiny,tiny"}, "--shape 'tiny' is given twice"},
      {{"run", "bandwidth", "--weight-format", "bf16,bf16"}, "--weight-format 'bf16' is given twice"},
      {{"run", "bandwidth", "--mode", "graph,eager,graph"}, "--mode 'graph' is given twice"},
      {{"run", "copy", "bandwidth", "copy"}, "probe 'copy' is given twice"},
      {{"run", "copy", "--switch", "pdl=off", "--switch", "pdl=on"}, "--switch 'pdl' is given twice"},
      {{"compare", report("h200-base.json"), report("h200-base.json"), "--metric", "gpu,host,gpu"},
       "--metric 'gpu' is given twice"},
  };
  for (const Twice& t : cases) {
    CAPTURE(t.says);
    std::string line = moe::test::quote(moe::test::moebench_binary());
    for (const std::string& a : t.args) line += " " + moe::test::quote(a);
    line += " -o " + moe::test::quote(out);
    const auto r = moe::test::run_shell(line);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(t.says) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(out));
}
