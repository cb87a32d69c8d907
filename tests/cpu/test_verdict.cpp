// The verdict rules over fabricated results: a PASS is earned by checks and evidence, never a
// default; each loophole a read of the probes found comes out INCONCLUSIVE or FAIL here; and
// selftest's catch rule counts only the checks named for a mutation, in every case and rep.
#include <doctest/doctest.h>

#include <string>

#include "reports/report.hpp"
#include "reports/verdict.hpp"

using moe::report::CaseResult;
using moe::report::CatchTarget;
using moe::report::Check;
using moe::report::Verdict;

namespace {

CaseResult fabricated(const std::string& probe, const std::string& name,
                      std::vector<Check> checks, std::initializer_list<const char*> required = {}) {
  CaseResult c;
  c.probe = probe;
  c.name = name;
  c.checks = std::move(checks);
  c.require(required);
  return c;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a result starts INCONCLUSIVE: nothing concluded is not a PASS") {
  const CaseResult c;
  CHECK(c.verdict == Verdict::inconclusive);
  CaseResult none = fabricated("copy", "read", {});
  none.conclude("measured");
  CHECK(none.verdict == Verdict::inconclusive);  // no check ran
  CHECK(contains(none.reason, "no check ran"));
}

TEST_CASE("PASS needs every check passed and every required piece of evidence proven") {
  CaseResult c = fabricated("drop-after-inflight", "layer", {{"inflight_output_matches_reference", true, "ok"}},
                            {"forward_pending_at_destroy", "next_request_received_freed_blocks"});
  c.prove("forward_pending_at_destroy", true);
  c.prove("next_request_received_freed_blocks", true);
  c.conclude("waited");
  CHECK(c.verdict == Verdict::pass);
  CHECK(c.reason == "waited");
  CHECK(moe::report::unproven_evidence(c).empty());
}

TEST_CASE("loophole: drop-after-inflight with the queue-ahead missed is INCONCLUSIVE, not PASS") {
  CaseResult c = fabricated("drop-after-inflight", "layer", {{"inflight_output_matches_reference", true, "ok"}},
                            {"forward_pending_at_destroy", "next_request_received_freed_blocks"});
  c.prove("forward_pending_at_destroy", false, "the forward had already finished");
  c.prove("next_request_received_freed_blocks", true);
  c.conclude("waited");
  CHECK(c.verdict == Verdict::inconclusive);
  CHECK(contains(c.reason, "forward_pending_at_destroy"));
  CHECK(contains(c.reason, "the forward had already finished"));
  CHECK_FALSE(contains(c.reason, "waited"));  // the pass reason is not used
}

TEST_CASE("loophole: evidence the probe declared but never recorded is unproven") {
  CaseResult c = fabricated("scratch-regrow", "schedule", {{"every_call_matches_reference", true, ""}},
                            {"regrew", "every_regrow_under_pending_call", "every_freed_block_taken_by_other_stream"});
  c.prove("regrew", true);
  c.evidence["every_regrow_under_pending_call"] = 5;  // a count, not a proof: not `true`
  c.conclude("ok");
  CHECK(c.verdict == Verdict::inconclusive);
  const auto missing = moe::report::unproven_evidence(c);
  CHECK(missing == std::vector<std::string>{"every_regrow_under_pending_call", "every_freed_block_taken_by_other_stream"});
  CHECK(contains(c.reason, "no evidence recorded"));  // every_freed_block_taken_by_other_stream
}

TEST_CASE("loophole: two-engine with one engine, or reuse of the expert buffers, is not a PASS") {
  auto two_engine = [] {
    return fabricated("two-engine", "sequence",
                      {{"resident_tables_point_at_own_experts", true, ""}, {"outputs_match_own_seed", true, ""}},
                      {"weights_address_reused", "expert_buffers_elsewhere", "freed_experts_poisoned",
                       "fast_path_tables_read_back"});
  };
  CaseResult one = two_engine();  // --engines 1: nothing could be reused
  one.prove("weights_address_reused", false, "only one engine ran");
  one.prove("expert_buffers_elsewhere", false, "");
  one.prove("freed_experts_poisoned", false, "");
  one.prove("fast_path_tables_read_back", true);
  one.conclude("ok");
  CHECK(one.verdict == Verdict::inconclusive);
  CHECK(contains(one.reason, "only one engine ran"));

  CaseResult layout = two_engine();  // role-for-role reuse: a stale table would read right values
  layout.prove("weights_address_reused", true);
  layout.prove("expert_buffers_elsewhere", false, "12 expert buffers were handed to later engines");
  layout.prove("freed_experts_poisoned", true);
  layout.prove("fast_path_tables_read_back", true);
  layout.conclude("ok");
  CHECK(layout.verdict == Verdict::inconclusive);

  CaseResult no_fast_path = two_engine();  // a host counter is not proof: the table read back is
  no_fast_path.prove("weights_address_reused", true);
  no_fast_path.prove("expert_buffers_elsewhere", true);
  no_fast_path.prove("freed_experts_poisoned", true);
  no_fast_path.prove("fast_path_tables_read_back", false, "2 of 2 layers handed the kernels no table");
  no_fast_path.conclude("ok");
  CHECK(no_fast_path.verdict == Verdict::inconclusive);
}

TEST_CASE("loophole: a cache-inflated bandwidth figure does not PASS") {
  CaseResult hot = fabricated("bandwidth", "step-l2-hot", {{"layer0_matches_reference", true, ""}},
                              {"outputs_checked", "l2_defeated"});
  hot.prove("outputs_checked", true);
  hot.prove("l2_defeated", false, "0 of 20 samples followed a flush; 0.3x the L2");
  hot.conclude("measured");
  CHECK(hot.verdict == Verdict::inconclusive);
  CHECK(contains(hot.reason, "0.3x the L2"));
  // Asked for cold and not defeated: the check that exists for it fails.
  CaseResult cold = fabricated("bandwidth", "step",
                               {{"layer0_matches_reference", true, ""}, {"cold_figure_defeats_l2", false, "no flush"}},
                               {"outputs_checked", "l2_defeated"});
  cold.prove("outputs_checked", true);
  cold.prove("l2_defeated", false, "no flush");
  cold.conclude("measured");
  CHECK(cold.verdict == Verdict::fail);
  CHECK(contains(cold.reason, "cold_figure_defeats_l2"));
}

TEST_CASE("a FAIL's reason names the failed checks, set after they concluded") {
  CaseResult c = fabricated("capture-replay", "cycle",
                            {{"capture_refused_before_warmup", true, ""},
                             {"no_sync_inside_capture", false, "1 synchronised inside"},
                             {"capture_cycles_correct", false, "cycle 0: capture synchronised"}});
  c.reason = "every capture hazard checked";  // a reason set early must not survive
  c.conclude("every capture hazard checked");
  CHECK(c.verdict == Verdict::fail);
  CHECK(contains(c.reason, "check 'no_sync_inside_capture' failed: 1 synchronised inside"));
  CHECK(contains(c.reason, "1 more: capture_cycles_correct"));
  CHECK_FALSE(contains(c.reason, "every capture hazard checked"));
}

TEST_CASE("an ERROR stays an ERROR, with its reason") {
  CaseResult c = fabricated("copy", "run", {{"x", false, ""}});
  c.verdict = Verdict::error;
  c.reason = "cudaErrorIllegalAddress";
  c.conclude("ok");
  CHECK(c.verdict == Verdict::error);
  CHECK(c.reason == "cudaErrorIllegalAddress");
}

TEST_CASE("required evidence survives a JSON round trip; older reports read without it") {
  CaseResult c = fabricated("barrier", "loops", {{"harness_barrier_waits", true, ""}},
                            {"noop_barrier_artifact_visible"});
  c.prove("noop_barrier_artifact_visible", true);
  c.conclude("ok");
  nlohmann::json j = c;
  CHECK(j.at("required_evidence") == nlohmann::json{"noop_barrier_artifact_visible"});
  const CaseResult back = j.get<CaseResult>();
  CHECK(back.required_evidence == c.required_evidence);
  CHECK(back.verdict == Verdict::pass);
  j.erase("required_evidence");
  CHECK(j.get<CaseResult>().required_evidence.empty());
}

TEST_CASE("repetitions are read from the case names --repeat gives") {
  CHECK(moe::report::repetition_of(fabricated("p", "cycle#12", {})) == 12);
  CHECK(moe::report::repetition_of(fabricated("p", "cycle", {})) == 0);
  CHECK(moe::report::repetition_of(fabricated("p", "odd#name", {})) == 0);
  CHECK(moe::report::base_name(fabricated("p", "layer#3", {})) == "layer");
}

// ---- selftest's catch rule ----------------------------------------------------------------

namespace {

const CatchTarget kDrop{"drop-after-inflight", "", {"inflight_output_matches_reference"}};

CaseResult drop_case(const std::string& name, bool output_ok, bool usable_ok) {
  CaseResult c = fabricated("drop-after-inflight", name,
                            {{"inflight_output_matches_reference", output_ok, "rel L2"},
                             {"device_usable_after", usable_ok, "round trip"}},
                            {"forward_pending_at_destroy"});
  c.prove("forward_pending_at_destroy", true);
  c.conclude("ok");
  return c;
}

}  // namespace

TEST_CASE("catch rule: the named check must FAIL in every applicable case of every rep") {
  std::vector<CaseResult> cases{drop_case("layer#0", false, true), drop_case("engine#0", false, true),
                                drop_case("layer#1", false, true), drop_case("engine#1", false, true)};
  auto j = moe::report::judge_mutation_row(cases, kDrop, 2);
  CHECK(j.ok);
  CHECK(j.good_reps == 2);
  CHECK(j.collateral.empty());

  // One case of one rep caught nothing: the mutation is not caught, whatever else failed.
  cases[3] = drop_case("engine#1", true, false);
  j = moe::report::judge_mutation_row(cases, kDrop, 2);
  CHECK_FALSE(j.ok);
  CHECK(j.good_reps == 1);
  REQUIRE(!j.missed.empty());
  CHECK(contains(j.missed[0], "rep 1 case engine"));
  CHECK(contains(j.missed[0], "inflight_output_matches_reference' passed"));
  // The other failure is collateral, reported, not counted as the catch.
  REQUIRE(j.collateral.size() == 1);
  CHECK(contains(j.collateral[0], "device_usable_after"));
}

TEST_CASE("catch rule: a FAIL for another reason is not a catch (the old rule's loophole)") {
  // Under the old rule "any FAIL in any case" this counted as caught.
  std::vector<CaseResult> cases{drop_case("layer", true, false)};
  const auto j = moe::report::judge_mutation_row(cases, kDrop, 1);
  CHECK(cases[0].verdict == Verdict::fail);
  CHECK_FALSE(j.ok);
  CHECK(j.collateral.size() == 1);
}

TEST_CASE("catch rule: missing reps, errors and absent cases are misses") {
  std::vector<CaseResult> cases{drop_case("layer#0", false, true)};
  auto j = moe::report::judge_mutation_row(cases, kDrop, 3);  // reps 1 and 2 left no case
  CHECK(j.good_reps == 1);
  CHECK(j.errored == 2);
  CHECK_FALSE(j.ok);

  CaseResult err = fabricated("drop-after-inflight", "run", {});
  err.verdict = Verdict::error;
  err.reason = "illegal address";
  j = moe::report::judge_mutation_row({err}, kDrop, 1);
  CHECK_FALSE(j.ok);
  CHECK(j.errored == 1);

  // Cases of another probe only: the mutation applied nowhere, so nothing was caught.
  j = moe::report::judge_mutation_row({drop_case("layer", false, true)},
                                      CatchTarget{"two-engine", "sequence", {"outputs_match_own_seed"}}, 1);
  CHECK_FALSE(j.ok);
  CHECK(contains(j.missed[0], "no case of probe two-engine"));
}

TEST_CASE("catch rule: a case prefix limits where the mutation applies") {
  CaseResult read = fabricated("bandwidth", "read", {{"read_xor_matches_cpu", true, ""}});
  CaseResult step = fabricated("bandwidth", "step", {{"cold_figure_defeats_l2", false, "no flush"}});
  step.conclude("");
  const CatchTarget t{"bandwidth", "step", {"cold_figure_defeats_l2"}};
  CHECK(moe::report::judge_mutation_row({read, step}, t, 1).ok);
  // No checks named: each applicable case's verdict must be FAIL.
  CaseResult passing = fabricated("bandwidth", "step", {{"x", true, ""}}, {"e"});
  passing.prove("e", true);
  passing.conclude("");
  CHECK_FALSE(moe::report::judge_mutation_row({passing}, CatchTarget{"bandwidth", "", {}}, 1).ok);
  CHECK(moe::report::judge_mutation_row({step}, CatchTarget{"bandwidth", "", {}}, 1).ok);
}

TEST_CASE("clean rows: every case PASS with its evidence shown, in every rep") {
  CaseResult good = drop_case("layer#0", true, true);
  CaseResult good1 = drop_case("layer#1", true, true);
  auto j = moe::report::judge_clean_row({good, good1}, 2);
  CHECK(j.ok);
  CHECK(j.evidence.at("forward_pending_at_destroy").at("proven") == 2);
  CHECK(j.evidence.at("forward_pending_at_destroy").at("cases") == 2);

  CaseResult unforced = drop_case("layer#1", true, true);
  unforced.prove("forward_pending_at_destroy", false, "missed");
  unforced.conclude("ok");
  j = moe::report::judge_clean_row({good, unforced}, 2);
  CHECK_FALSE(j.ok);
  CHECK(j.evidence.at("forward_pending_at_destroy").at("proven") == 1);

  // A PASS that declares no evidence (a hand-made report) does not make a clean row.
  CaseResult bare = fabricated("copy", "read", {{"read_xor_matches_cpu", true, ""}});
  bare.verdict = Verdict::pass;
  CHECK_FALSE(moe::report::judge_clean_row({bare}, 1).ok);
}

TEST_CASE("the older conclude_from_checks keeps the reason already set as the pass reason") {
  CaseResult c = fabricated("copy", "read", {{"read_xor_matches_cpu", true, ""}});
  c.reason = "read ceiling measured";
  c.conclude_from_checks();  // no evidence declared: the checks alone decide
  CHECK(c.verdict == Verdict::pass);
  CHECK(c.reason == "read ceiling measured");
  c.checks.push_back({"late", false, "broke"});
  c.conclude_from_checks();
  CHECK(c.verdict == Verdict::fail);
  CHECK(contains(c.reason, "late"));
}
