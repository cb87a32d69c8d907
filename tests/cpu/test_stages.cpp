// Probe stages' host side: kernel names to stages, one sample's kernels split into own and
// critical-path time, the floors' bytes, and how the renderers show the result.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/moe/kernel_stage.hpp"
#include "probes/stages/stage_breakdown.hpp"
#include "probes/stages/stage_evidence.hpp"
#include "probes/evidence_rules.hpp"
#include "reports/verdict.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/stage_view.hpp"
#include "reports/table.hpp"
#include "support/l2_observed.hpp"

using moe::kernels::Stage;
using moe::kernels::stage_of_kernel;
using moe::measure::KernelRecord;

namespace {

using moe::test::l2_observed;
const moe::report::L2Observed kCold = l2_observed(1.0);

// Names as CUPTI records them (mangled), taken from the built kernels.
constexpr const char* kRoute =
    "_ZN3moe7kernels43_GLOBAL__N__c5d1dd52_10_routing_cu_32f0c43c12route_kernelENS1_11RouteParamsE";
constexpr const char* kRouteCluster =
    "_ZN3moe7kernels43_GLOBAL__N__c5d1dd52_10_routing_cu_32f0c43cL20route_cluster_kernelILb1EEEvNS1_"
    "11RouteParamsE";
constexpr const char* kGateUpDecode =
    "_ZN3moe7kernels54_GLOBAL__N__cf04888e_21_expert_gemm_decode_cu_1ed25a06L25decode_expert_gemm_"
    "kernelILNS0_12WeightFormatE1ELb1ELi2ELb0EEEvNS0_6decode12DecodeParamsE";
constexpr const char* kDownDecodeMma =
    "_ZN3moe7kernels54_GLOBAL__N__cf04888e_21_expert_gemm_decode_cu_1ed25a06L25decode_expert_gemm_"
    "kernelILNS0_12WeightFormatE1ELb0ELi8ELb1EEEvNS0_6decode12DecodeParamsE";
constexpr const char* kGateUpTc =
    "_ZN3moe7kernels59_GLOBAL__N__d6f369f6_26_expert_gemm_tensor_core_cu_a72b062121tc_expert_gemm_"
    "kernelILNS0_12WeightFormatE0ELb1EEEvNS1_8TcParamsE";
constexpr const char* kDownTc =
    "_ZN3moe7kernels59_GLOBAL__N__d6f369f6_26_expert_gemm_tensor_core_cu_a72b062121tc_expert_gemm_"
    "kernelILNS0_12WeightFormatE0ELb0EEEvNS1_8TcParamsE";
constexpr const char* kCombine =
    "_ZN3moe7kernels43_GLOBAL__N__0ce47c65_10_combine_cu_c9c0612914combine_kernelEPKfS3_PKiiiiiP13__"
    "nv_bfloat16";

KernelRecord rec(const char* name, std::uint64_t start_us, std::uint64_t end_us) {
  return {name, start_us * 1000, end_us * 1000};
}

std::size_t at(Stage s) { return static_cast<std::size_t>(s); }

}  // namespace

TEST_CASE("every kernel of the forward maps to its stage, mangled or not") {
  CHECK(stage_of_kernel(kRoute) == Stage::route);
  CHECK(stage_of_kernel(kRouteCluster) == Stage::route);
  CHECK(stage_of_kernel(kGateUpDecode) == Stage::gate_up);
  CHECK(stage_of_kernel(kDownDecodeMma) == Stage::down);
  CHECK(stage_of_kernel(kGateUpTc) == Stage::gate_up);
  CHECK(stage_of_kernel(kDownTc) == Stage::down);
  CHECK(stage_of_kernel(kCombine) == Stage::combine);
  // Demangled names (a profiler's, or CUPTI's with demangling on) give the same stages.
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::decode_expert_gemm_kernel<"
                        "(moe::kernels::WeightFormat)0, false, 1, false>(moe::kernels::decode::"
                        "DecodeParams)") == Stage::down);
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::mma_expert_gemm_kernel<"
                        "(moe::kernels::WeightFormat)1, true, 4>(moe::kernels::decode::DecodeParams)") ==
        Stage::gate_up);
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::mma_expert_gemm_kernel<"
                        "(moe::kernels::WeightFormat)0, false, 1>(moe::kernels::decode::DecodeParams)") ==
        Stage::down);
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::stream_expert_gemm_kernel<"
                        "(moe::kernels::WeightFormat)1, true, 2>(moe::kernels::stream::Params)") == Stage::gate_up);
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::stream_expert_gemm_kernel<"
                        "(moe::kernels::WeightFormat)0, false, 1>(moe::kernels::stream::Params)") == Stage::down);
  // The warp-group MMA tiles (prefill sizes on sm_90a) name kGateUp third, as a profiler shows them.
  CHECK(stage_of_kernel("wgmma_expert_gemm_kernel<(moe::kernels::WeightFormat)0, 256, true, "
                        "(moe::kernels::Int4Layout)0>") == Stage::gate_up);
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::wgmma_expert_gemm_kernel<"
                        "(moe::kernels::WeightFormat)1, 256, false, (moe::kernels::Int4Layout)1>"
                        "(moe::kernels::ExpertGemmOperands)") == Stage::down);
  CHECK(stage_of_kernel("wgmma_expert_gemm_kernel<(moe::kernels::WeightFormat)0, 256>") == Stage::other);  // no kGateUp
  // The route's grouping over the grid (from 65 tokens) is the route's.
  CHECK(stage_of_kernel("_ZN3moe7kernels12_GLOBAL__N_124route_group_words_kernelENS0_5route11RouteParamsE") ==
        Stage::route);
  CHECK(stage_of_kernel("void moe::kernels::(anonymous namespace)::route_group_pairs_kernel(moe::kernels::"
                        "route::RouteParams)") == Stage::route);
  CHECK(stage_of_kernel("moe::kernels::(anonymous namespace)::route_kernel(moe::kernels::"
                        "(anonymous namespace)::RouteParams)") == Stage::route);
  // Anything else is "other", never silently one of the four.
  CHECK(stage_of_kernel("_ZN3moe7kernels12fill_patternEPjmjP11CUstream_st") == Stage::other);
  CHECK(stage_of_kernel("read_stream_kernel") == Stage::other);
  CHECK(stage_of_kernel("") == Stage::other);
  CHECK(stage_of_kernel("decode_expert_gemm_kernel") == Stage::other);  // no kGateUp to read
  CHECK(moe::kernels::short_kernel_name(kGateUpDecode) ==
        "decode_expert_gemm_kernel<(moe::kernels::WeightFormat)1, true, 2, false>");
  CHECK(moe::kernels::short_kernel_name(kCombine) == "combine_kernel");
}

TEST_CASE("own time counts overlaps in each stage; critical time counts each instant once") {
  // One layer under programmatic launch: gate_up starts 4 us before the route ends, down 2 us
  // before gate_up ends; a 3 us launch gap before combine.
  const std::vector<KernelRecord> layer{rec(kCombine, 53, 55), rec(kRouteCluster, 0, 10),
                                        rec(kGateUpDecode, 6, 30), rec(kDownDecodeMma, 28, 50)};
  const moe::StageSample s = moe::split_by_stage(layer, 1);
  CHECK(s.own_us[at(Stage::route)] == doctest::Approx(10));
  CHECK(s.own_us[at(Stage::gate_up)] == doctest::Approx(24));
  CHECK(s.own_us[at(Stage::down)] == doctest::Approx(22));
  CHECK(s.own_us[at(Stage::combine)] == doctest::Approx(2));
  CHECK(s.critical_us[at(Stage::route)] == doctest::Approx(10));
  CHECK(s.critical_us[at(Stage::gate_up)] == doctest::Approx(20));  // 10..30
  CHECK(s.critical_us[at(Stage::down)] == doctest::Approx(20));     // 30..50
  CHECK(s.critical_us[at(Stage::combine)] == doctest::Approx(2));   // the gap is in no stage
  CHECK(s.busy_us == doctest::Approx(52));
  CHECK(s.kernels[at(Stage::gate_up)] == 1);
  CHECK(s.kernels[at(Stage::other)] == 0);

  // A kernel wholly inside an earlier one adds nothing to the critical path.
  const moe::StageSample inside =
      moe::split_by_stage({rec(kGateUpDecode, 0, 30), rec(kDownTc, 5, 20)}, 1);
  CHECK(inside.own_us[at(Stage::down)] == doctest::Approx(15));
  CHECK(inside.critical_us[at(Stage::down)] == doctest::Approx(0));

  // Two layers back to back: per-layer figures are the step's over the layers.
  std::vector<KernelRecord> two = layer;
  for (const KernelRecord& r : layer) two.push_back({r.name, r.start_ns + 60000, r.end_ns + 60000});
  const moe::StageSample per_layer = moe::split_by_stage(two, 2);
  for (std::size_t i = 0; i < moe::kStageCount; ++i) {
    CHECK(per_layer.own_us[i] == doctest::Approx(s.own_us[i]));
    CHECK(per_layer.critical_us[i] == doctest::Approx(s.critical_us[i]));
  }
  CHECK(per_layer.kernels[at(Stage::route)] == 2);

  // An unknown kernel is counted, in other.
  const moe::StageSample other = moe::split_by_stage({rec("mystery_kernel", 0, 4)}, 1);
  CHECK(other.own_us[at(Stage::other)] == doctest::Approx(4));
  CHECK(other.kernels[at(Stage::other)] == 1);
  CHECK(moe::split_by_stage({}, 1).busy_us == 0);
}

TEST_CASE("a stage that ran no kernel is refused, never timed as 0 us") {
  const std::vector<KernelRecord> whole{rec(kRouteCluster, 0, 10), rec(kGateUpDecode, 6, 30),
                                        rec(kDownDecodeMma, 28, 50), rec(kCombine, 53, 55)};
  // combine's records lost (or its kernel fused away) in one sample of three.
  const std::vector<KernelRecord> no_combine{rec(kRouteCluster, 0, 10), rec(kGateUpDecode, 6, 30),
                                             rec(kDownDecodeMma, 28, 50)};
  std::vector<moe::StageSample> samples{moe::split_by_stage(whole, 1), moe::split_by_stage(no_combine, 1),
                                        moe::split_by_stage(whole, 1)};
  CHECK(samples[1].own_us[at(Stage::combine)] == 0);  // what the probe would have reported
  const moe::StageEvidence missing = moe::stage_evidence(samples, 3, kCold);
  CHECK(missing.l2_cold);
  CHECK_FALSE(missing.every_stage_has_kernels);
  CHECK(missing.stages_without_kernels == std::vector<Stage>{Stage::combine});
  CHECK(missing.kernels_detail.find("no combine kernel in 1 of 3 samples") != std::string::npos);

  // Every stage in every sample: proven; `other` is never required.
  samples[1] = moe::split_by_stage(whole, 1);
  const moe::StageEvidence full = moe::stage_evidence(samples, 3, kCold);
  CHECK(full.every_stage_has_kernels);
  CHECK(full.stages_without_kernels.empty());
  CHECK_FALSE(moe::timed_stage(Stage::other));

  // Two stages missing in every sample are both named, in stage order.
  const moe::StageEvidence two = moe::stage_evidence({moe::split_by_stage({rec(kRoute, 0, 5), rec(kCombine, 6, 8)}, 1)}, 1, kCold);
  CHECK(two.stages_without_kernels == std::vector<Stage>{Stage::gate_up, Stage::down});

  // No samples at all: nothing is timed.
  const moe::StageEvidence none = moe::stage_evidence({}, 0, std::nullopt);
  CHECK_FALSE(none.every_stage_has_kernels);
  CHECK_FALSE(none.l2_cold);
  CHECK(none.stages_without_kernels.size() == 4);
}

TEST_CASE("stages needs every sample after an L2 flush observed cold: --l2 hot, one unflushed sample, a partial or concurrent flush is not cold") {
  const std::vector<KernelRecord> whole{rec(kRoute, 0, 10), rec(kGateUpDecode, 6, 30),
                                        rec(kDownDecodeMma, 28, 50), rec(kCombine, 53, 55)};
  const std::vector<moe::StageSample> samples(5, moe::split_by_stage(whole, 1));
  CHECK(moe::stage_evidence(samples, 5, kCold).l2_cold);
  CHECK(moe::stage_evidence(samples, 6, kCold).l2_cold);  // a flush before the warm-up counts too
  const moe::StageEvidence hot = moe::stage_evidence(samples, 0, std::nullopt);
  CHECK_FALSE(hot.l2_cold);
  CHECK(hot.l2_detail.find("0 of 5 samples") != std::string::npos);
  CHECK(hot.l2_detail.find("not observed") != std::string::npos);
  CHECK_FALSE(moe::stage_evidence(samples, 4, kCold).l2_cold);
  // Every sample flushed, but the flush not seen to leave the L2 cold: half of it flushed (24 of
  // 32 canary lines evicted), or a flush still running on another stream when the sample began.
  const moe::StageEvidence half = moe::stage_evidence(samples, 5, l2_observed(0.75));
  CHECK_FALSE(half.l2_cold);
  CHECK(half.l2_detail.find("75% of 32 lines evicted") != std::string::npos);
  CHECK_FALSE(moe::stage_evidence(samples, 5, l2_observed(1.0, 1)).l2_cold);
  CHECK_FALSE(moe::stage_evidence(samples, 5, std::nullopt).l2_cold);
}

TEST_CASE("the stages rule: a hot L2 or an untimed stage makes the case INCONCLUSIVE, naming it") {
  using moe::report::Verdict;
  const auto& required = moe::required_evidence("stages");
  for (const char* name : {"outputs_checked", "kernel_records", "l2_cold", "every_stage_has_kernels"})
    CHECK(std::find(required.begin(), required.end(), name) != required.end());
  auto judged = [&](bool l2_cold, bool every_stage) {
    moe::report::CaseResult c;
    c.probe = "stages";
    c.name = "layer";
    c.required_evidence = required;
    c.checks.push_back({"layer0_matches_reference", true, "ok"});
    c.checks.push_back({"every_kernel_in_a_stage", true, "ok"});
    c.prove("outputs_checked", true);
    c.prove("kernel_records", true);
    c.prove("l2_cold", l2_cold, "0 of 5 samples followed an L2 flush");
    c.prove("every_stage_has_kernels", every_stage, "no combine kernel in 1 of 5 samples");
    c.conclude("timed");
    return c;
  };
  CHECK(judged(true, true).verdict == Verdict::pass);
  const auto hot = judged(false, true);
  CHECK(hot.verdict == Verdict::inconclusive);
  CHECK(hot.reason.find("l2_cold") != std::string::npos);
  const auto untimed = judged(true, false);
  CHECK(untimed.verdict == Verdict::inconclusive);
  CHECK(untimed.reason.find("every_stage_has_kernels") != std::string::npos);
}

TEST_CASE("each stage's floor reads what that stage must read") {
  moe::LayerTraffic t;
  t.router = 100;
  t.activations_in = 10;
  t.gate_up_weights = 1000;
  t.down_weights = 500;
  t.h = 20;
  t.down_out = 40;
  const moe::StageBytes b = moe::stage_bytes(t);
  CHECK(b.bytes[at(Stage::route)] == 110);
  CHECK(b.bytes[at(Stage::gate_up)] == 1010);
  CHECK(b.bytes[at(Stage::down)] == 520);
  CHECK(b.bytes[at(Stage::combine)] == 40);
  CHECK(b.bytes[at(Stage::other)] == 0);
}

namespace {
moe::report::CaseResult stages_case(int m, bool with_other) {
  moe::report::CaseResult c;
  c.probe = "stages";
  c.name = "layer";
  c.shape = "deepseek-v2-lite";
  c.m = m;
  c.format = "bf16";
  c.mode = "graph";
  const char* names[] = {"route", "gate_up", "down", "combine"};
  for (int i = 0; i < 4; ++i) {
    c.metrics[std::string(names[i]) + "_us"] = {10.0 + i, "us"};
    c.metrics[std::string(names[i]) + "_critical_us"] = {5.0 + i, "us"};
    c.metrics[std::string(names[i]) + "_floor_us"] = {1.0 + i, "us"};
  }
  if (with_other) {
    c.metrics["other_us"] = {3, "us"};
    c.metrics["other_critical_us"] = {3, "us"};
    c.metrics["other_floor_us"] = {0, "us"};
  }
  c.metrics["critical_path_us"] = {26, "us"};
  c.metrics["gpu_us_per_layer"] = {29.5, "us"};
  c.metrics["floor_us"] = {10, "us"};
  return c;
}
}  // namespace

TEST_CASE("the renderers show each stage's own time, critical share and floor") {
  moe::report::Report r;
  r.cases.push_back(stages_case(1, false));
  r.cases.push_back(stages_case(8, true));
  moe::report::CaseResult not_stages = stages_case(1, false);
  not_stages.probe = "bandwidth";
  r.cases.push_back(not_stages);

  const auto rows = moe::report::stage_rows(r);
  REQUIRE(rows.size() == 2);
  // The same columns in every row; "other" only because one case had it.
  REQUIRE(rows[0].stages.size() == 5);
  REQUIRE(rows[1].stages.size() == 5);
  CHECK(rows[0].stages[4].stage == "other");
  CHECK(std::isnan(rows[0].stages[4].own_us));
  CHECK(rows[1].stages[4].own_us == 3);
  CHECK(rows[0].stages[1].critical_us == 6);
  CHECK(rows[0].label == "deepseek-v2-lite M=1 bf16 graph");

  const std::string table = moe::report::render_table(r);
  CHECK(table.find("gate_up own/crit (floor)") != std::string::npos);
  CHECK(table.find("11.0/6.00 (2.00)") != std::string::npos);
  const std::string md = moe::report::render_markdown(r);
  CHECK(md.find("### Stages") != std::string::npos);
  CHECK(md.find("| deepseek-v2-lite M=8 bf16 graph |") != std::string::npos);
  const std::string html = moe::report::render_html(r);
  CHECK(html.find("<h2>Stages</h2>") != std::string::npos);
  CHECK(html.find("deepseek-v2-lite M=8 bf16 graph: gate_up 6.00") != std::string::npos);

  // Without stages cases nothing is added.
  moe::report::Report none;
  none.cases.push_back(not_stages);
  CHECK(moe::report::stage_rows(none).empty());
  CHECK(moe::report::render_html(none).find("<h2>Stages</h2>") == std::string::npos);
}
